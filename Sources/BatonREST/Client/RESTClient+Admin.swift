import BatonJSON
import NIOHTTP1

/// The reference server's `/admin` routes: for tests, demos and chaos runs.
extension RESTClient {
    /// Seeds `count` records of `type` with `timeStamps` distinct LastModifiedDates; returns the
    /// ids when there are at most 1000. `schema` (`{"objects": [...]}`, as `baton serve --schema`
    /// reads) declares types and fields first; a new type and the template's fields are declared
    /// anyway.
    @discardableResult
    public func adminSeed(
        type: String, count: Int, timeStamps: Int? = nil, bytes: Int = 0, fields: JSONObject = [:],
        schema: JSONValue? = nil
    )
        async throws -> [String]
    {
        var body: JSONObject = [
            "type": .string(type), "count": .int(Int64(count)), "bytes": .int(Int64(bytes)),
        ]
        if let timeStamps { body["timeStamps"] = .int(Int64(timeStamps)) }
        if !fields.isEmpty { body["fields"] = .object(fields) }
        if let schema { body["schema"] = schema }
        let reply = try await send(.POST, "/admin/seed", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Modifies records (given ids, or `count` random ones); returns the ids touched.
    @discardableResult
    public func adminTouch(type: String, ids: [String]? = nil, count: Int? = nil, fields: JSONObject = [:])
        async throws
        -> [String]
    {
        var body: JSONObject = ["type": .string(type), "fields": .object(fields)]
        if let ids { body["ids"] = .array(ids.map(JSONValue.string)) }
        if let count { body["count"] = .int(Int64(count)) }
        let reply = try await send(.POST, "/admin/touch", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Deletes records (given ids, or `count` random ones); returns the ids deleted.
    @discardableResult
    public func adminDelete(type: String, ids: [String]? = nil, count: Int? = nil) async throws -> [String] {
        var body: JSONObject = ["type": .string(type)]
        if let ids { body["ids"] = .array(ids.map(JSONValue.string)) }
        if let count { body["count"] = .int(Int64(count)) }
        let reply = try await send(.POST, "/admin/delete", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Deletes every record of `type`; returns how many there were.
    @discardableResult
    public func adminReset(type: String) async throws -> Int {
        let reply = try await send(.POST, "/admin/reset", body: ["type": .string(type)], idempotent: true)
        return Int(reply.body.value(atPath: "deleted")?.intValue ?? 0)
    }

    /// Every record of `type` on the server, with server-managed fields.
    public func adminRecords(type: String) async throws -> [JSONObject] {
        let reply = try await send(.GET, "/admin/records?type=\(Self.encode(type))", idempotent: true)
        return reply.body.value(atPath: "records")?.arrayValue?.compactMap(\.objectValue) ?? []
    }

    /// `{"requests", "recordsServed": {type: n}, "records": {type: n}, "faultsInjected": {…}}`.
    public func adminStats() async throws -> JSONValue {
        try await send(.GET, "/admin/stats", idempotent: true).body
    }

    /// Zeroes the request and served counters.
    public func adminResetStats() async throws {
        _ = try await send(.POST, "/admin/stats/reset", idempotent: true)
    }

    /// Sets faults: `latencyMs`, `errorRate`, `failNext`, `dropConnectionNext`,
    /// `dropConnectionRate`, `dropAfterCommitNext`, `dropAfterCommitRate`, `holdAfterCommitMs`,
    /// `seed`.
    public func adminSetFaults(_ faults: JSONObject) async throws {
        _ = try await send(.POST, "/admin/faults", body: .object(faults), idempotent: true)
    }

    /// The fault settings in force.
    public func adminFaults() async throws -> JSONValue {
        try await send(.GET, "/admin/faults", idempotent: true).body
    }

    /// Clears every fault.
    public func adminClearFaults() async throws {
        _ = try await send(.DELETE, "/admin/faults", idempotent: true)
    }
}
