import BatonJSON
import NIOHTTP1

/// One page of a query.
public struct QueryPage: Sendable, Hashable {
    /// Records the whole query matches.
    public var totalSize: Int
    /// True on the last page.
    public var done: Bool
    /// Where the next page is, when not done.
    public var nextRecordsUrl: String?
    /// This page's records, without their `attributes` envelope.
    public var records: [JSONObject]
    /// The server's clock when it answered (``RESTClient/Reply/serverTime``).
    public var serverTime: Int64?

    init(_ reply: RESTClient.Reply) throws {
        try self.init(reply.body)
        serverTime = reply.serverTime
    }

    init(_ body: JSONValue) throws {
        guard let records = body.value(atPath: "records")?.arrayValue,
            let total = body.value(atPath: "totalSize")?.intValue
        else { throw RESTError(.malformedResponse, "query response lacks records or totalSize") }
        self.totalSize = Int(total)
        self.done = body.value(atPath: "done")?.boolValue ?? true
        self.nextRecordsUrl = body.value(atPath: "nextRecordsUrl")?.stringValue
        // The parse left `attributes` out already: no record is copied to take it out.
        self.records = records.compactMap { value in
            guard var object = value.objectValue else { return nil }
            if object["attributes"] != nil { object["attributes"] = nil }
            return object
        }
    }
}

/// The outcome for one record of a composite call.
public struct CompositeResult: Sendable, Hashable {
    public var id: String?
    public var success: Bool
    /// For upserts: whether the record was created.
    public var created: Bool?
    /// The first error's code and message when it failed.
    public var errorCode: String?
    public var message: String?
    /// The fields the first error names (empty when it names none): a refusal of a field, such
    /// as `ENTITY_IS_DELETED` on a lookup, reads apart from one of the record itself by them.
    public var fields: [String]

    init(_ value: JSONValue) {
        id = value.value(atPath: "id")?.stringValue
        success = value.value(atPath: "success")?.boolValue ?? false
        created = value.value(atPath: "created")?.boolValue
        let error = value.value(atPath: "errors")?.arrayValue?.first
        errorCode =
            error?.value(atPath: "statusCode")?.stringValue ?? error?.value(atPath: "errorCode")?.stringValue
        message = error?.value(atPath: "message")?.stringValue
        fields = error?.value(atPath: "fields")?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

extension RESTClient {
    /// The first page of `soql`, with an optional batch size (1–2000).
    public func queryFirstPage(_ soql: String, batchSize: Int? = nil) async throws -> QueryPage {
        let headers = batchSize.map { [("Sforce-Query-Options", "batchSize=\($0)")] } ?? []
        let reply = try await send(
            .GET, "\(apiPath)/query?q=\(Self.encode(soql))", headers: headers, idempotent: true,
            shape: .queryPage)
        return try QueryPage(reply)
    }

    /// The page at a `nextRecordsUrl`, asking for `batchSize` records when given (the server
    /// may keep the query's own size).
    public func queryNextPage(_ nextRecordsUrl: String, batchSize: Int? = nil) async throws -> QueryPage {
        guard nextRecordsUrl.hasPrefix("/") else {
            throw RESTError(.malformedResponse, "nextRecordsUrl is not a server path")
        }
        let headers = batchSize.map { [("Sforce-Query-Options", "batchSize=\($0)")] } ?? []
        return try QueryPage(
            try await send(.GET, nextRecordsUrl, headers: headers, idempotent: true, shape: .queryPage))
    }

    /// The server's clock, read from the `Date` of its answer to `GET /services/data/vNN.0` (the
    /// version's resources: no records, no object touched); nil when it sent no `Date`.
    ///
    /// - Throws: ``RESTError``; a server that does not route the call answers `404`.
    public func serverTime() async throws -> Int64? {
        try await send(.GET, apiPath, idempotent: true).serverTime
    }

    /// Every page of `soql`, fetched one at a time as the sequence is iterated.
    public func query(_ soql: String, batchSize: Int? = nil) -> QueryPages {
        QueryPages(client: self, soql: soql, batchSize: batchSize)
    }

    /// Creates a record; returns its id. Not retried (a create is not idempotent; use upsert).
    public func create(type: String, fields: JSONObject) async throws -> String {
        let reply = try await send(
            .POST, "\(apiPath)/sobjects/\(Self.encode(type))", body: .object(fields), idempotent: false)
        guard let id = reply.body.value(atPath: "id")?.stringValue else {
            throw RESTError(.malformedResponse, "create response lacks an id")
        }
        return id
    }

    /// The record, or `nil` when it does not exist.
    public func get(type: String, id: String) async throws -> JSONObject? {
        do {
            let reply = try await send(
                .GET, "\(apiPath)/sobjects/\(Self.encode(type))/\(Self.encode(id))", idempotent: true)
            var record = reply.body.objectValue
            record?["attributes"] = nil
            return record
        } catch let error as RESTError where error.status == 404 {
            return nil
        }
    }

    /// Updates fields of a record.
    public func update(type: String, id: String, fields: JSONObject) async throws {
        _ = try await send(
            .PATCH, "\(apiPath)/sobjects/\(Self.encode(type))/\(Self.encode(id))", body: .object(fields),
            idempotent: true)
    }

    /// Deletes a record.
    public func delete(type: String, id: String) async throws {
        _ = try await send(
            .DELETE, "\(apiPath)/sobjects/\(Self.encode(type))/\(Self.encode(id))", idempotent: true)
    }

    /// Creates or updates the record whose `field` equals `value`. Safe to retry.
    public func upsert(type: String, field: String, value: String, fields: JSONObject) async throws -> (
        id: String, created: Bool
    ) {
        let reply = try await send(
            .PATCH, "\(apiPath)/sobjects/\(Self.encode(type))/\(Self.encode(field))/\(Self.encode(value))",
            body: .object(fields), idempotent: true)
        guard let id = reply.body.value(atPath: "id")?.stringValue else {
            throw RESTError(.malformedResponse, "upsert response lacks an id")
        }
        return (id, reply.body.value(atPath: "created")?.boolValue ?? (reply.status == 201))
    }

    /// Creates up to 200 records (`attributes.type` is added from `type`).
    public func compositeCreate(type: String, records: [JSONObject], allOrNone: Bool = false) async throws
        -> [CompositeResult]
    {
        try await composite(
            .POST, "\(apiPath)/composite/sobjects", type: type, records: records, allOrNone: allOrNone,
            idempotent: false)
    }

    /// Updates up to 200 records; each needs its `Id`.
    public func compositeUpdate(type: String, records: [JSONObject], allOrNone: Bool = false) async throws
        -> [CompositeResult]
    {
        try await composite(
            .PATCH, "\(apiPath)/composite/sobjects", type: type, records: records, allOrNone: allOrNone,
            idempotent: true)
    }

    /// Upserts up to 200 records on an external id field. Safe to retry.
    public func compositeUpsert(
        type: String, externalIdField: String, records: [JSONObject], allOrNone: Bool = false
    )
        async throws -> [CompositeResult]
    {
        try await composite(
            .PATCH, "\(apiPath)/composite/sobjects/\(Self.encode(type))/\(Self.encode(externalIdField))",
            type: type,
            records: records, allOrNone: allOrNone, idempotent: true)
    }

    /// Deletes up to 200 records by id.
    public func compositeDelete(ids: [String], allOrNone: Bool = false) async throws -> [CompositeResult] {
        let list = ids.map(Self.encode).joined(separator: ",")
        let reply = try await send(
            .DELETE, "\(apiPath)/composite/sobjects?ids=\(list)&allOrNone=\(allOrNone)", idempotent: true)
        return try Self.results(reply.body, expected: ids.count)
    }

    func composite(
        _ method: HTTPMethod, _ path: String, type: String, records: [JSONObject], allOrNone: Bool,
        idempotent: Bool
    ) async throws -> [CompositeResult] {
        let typed = records.map { record -> JSONValue in
            var copy = record
            copy["attributes"] = ["type": .string(type)]
            return .object(copy)
        }
        let reply = try await send(
            method, path, body: ["allOrNone": .bool(allOrNone), "records": .array(typed)],
            idempotent: idempotent)
        return try Self.results(reply.body, expected: records.count)
    }

    static func results(_ body: JSONValue, expected: Int) throws -> [CompositeResult] {
        guard let array = body.arrayValue, array.count == expected else {
            throw RESTError(.malformedResponse, "composite response has the wrong number of results")
        }
        return array.map(CompositeResult.init)
    }
}

/// The pages of a query, fetched lazily; iteration stops on the last page.
public struct QueryPages: AsyncSequence, Sendable {
    public typealias Element = QueryPage
    let client: RESTClient
    let soql: String
    let batchSize: Int?

    public struct AsyncIterator: AsyncIteratorProtocol {
        let pages: QueryPages
        var next: String?
        var started = false
        var finished = false

        public mutating func next() async throws -> QueryPage? {
            if finished { return nil }
            let page: QueryPage
            if !started {
                started = true
                page = try await pages.client.queryFirstPage(pages.soql, batchSize: pages.batchSize)
            } else if let url = next {
                page = try await pages.client.queryNextPage(url)
            } else {
                return nil
            }
            next = page.done ? nil : page.nextRecordsUrl
            finished = next == nil
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(pages: self) }
}
