import BatonJSON

extension RESTClient {
    /// Every record of a child subquery's result nested in a parent record, in order: the
    /// records it holds, then those of each further page its `nextRecordsUrl` leads to, until a
    /// page is `done`. Salesforce pages a parent's children when there are many (about 200 a
    /// page), so reading only the nested result's own records would miss the rest.
    ///
    /// The further pages are fetched one at a time with ``queryNextPage(_:batchSize:)``; a
    /// cancelled task ends the fetch at once (the request in flight is cancelled). Records come
    /// without their `attributes` envelope, wherever they were served, as a query page's do.
    ///
    /// - Parameter result: the nested `{"totalSize", "done", "nextRecordsUrl"?, "records"}`, or
    ///   null or absent when the parent has no children.
    /// - Throws: what ``queryNextPage(_:batchSize:)`` throws (`.cancelled` on cancellation), or
    ///   `.malformedResponse` for a result that is not done yet gives no `nextRecordsUrl`.
    func allRecords(ofNested result: JSONValue?) async throws -> [JSONObject] {
        guard let result, result.objectValue != nil else { return [] }
        var records = Self.withoutAttributes(result.value(atPath: "records")?.arrayValue ?? [])
        var done = result.value(atPath: "done")?.boolValue ?? true
        var next = result.value(atPath: "nextRecordsUrl")?.stringValue
        while !done {
            guard let url = next else {
                throw RESTError(
                    .malformedResponse, "a nested query result is not done but has no nextRecordsUrl")
            }
            let page = try await queryNextPage(url)
            records += page.records
            (done, next) = (page.done, page.nextRecordsUrl)
        }
        return records
    }

    /// The records of a nested result, as objects without `attributes` (the reply's parse
    /// leaves it in place below the top-level records).
    private static func withoutAttributes(_ values: [JSONValue]) -> [JSONObject] {
        values.compactMap { value in
            guard var object = value.objectValue else { return nil }
            if object["attributes"] != nil { object["attributes"] = nil }
            return object
        }
    }
}
