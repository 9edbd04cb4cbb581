import BatonJSON
import NIOHTTP1

/// The reference server's `/admin` routes: for tests, demos and chaos runs.
extension RESTClient {
    /// Seeds `count` records of `type` with `timeStamps` distinct LastModifiedDates, the newest
    /// `ageSeconds` before now; returns the ids when there are at most 1000. `schema`
    /// (`{"objects": [...]}`, as `baton serve --schema` reads) declares types and fields first; a
    /// new type and the template's fields are declared anyway.
    @discardableResult
    public func adminSeed(
        type: String, count: Int, timeStamps: Int? = nil, bytes: Int = 0, fields: JSONObject = [:],
        schema: JSONValue? = nil, ageSeconds: Int = 0
    )
        async throws -> [String]
    {
        var body: JSONObject = [
            "type": .string(type), "count": .int(Int64(count)), "bytes": .int(Int64(bytes)),
        ]
        if let timeStamps { body["timeStamps"] = .int(Int64(timeStamps)) }
        if ageSeconds > 0 { body["ageSeconds"] = .int(Int64(ageSeconds)) }
        if !fields.isEmpty { body["fields"] = .object(fields) }
        if let schema { body["schema"] = schema }
        let reply = try await send(.POST, "/admin/seed", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Modifies records (given ids, or `count` random ones), in one transaction (one stamp on
    /// Salesforce's clock), stamped `ageSeconds` before now when given (as an import that sets
    /// audit fields); returns the ids touched.
    @discardableResult
    public func adminTouch(
        type: String, ids: [String]? = nil, count: Int? = nil, fields: JSONObject = [:], ageSeconds: Int = 0
    )
        async throws
        -> [String]
    {
        var body: JSONObject = ["type": .string(type), "fields": .object(fields)]
        if ageSeconds > 0 { body["ageSeconds"] = .int(Int64(ageSeconds)) }
        if let ids { body["ids"] = .array(ids.map(JSONValue.string)) }
        if let count { body["count"] = .int(Int64(count)) }
        let reply = try await send(.POST, "/admin/touch", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Deletes records (given ids, or `count` random ones); returns the ids deleted.
    @discardableResult
    public func adminDelete(
        type: String, ids: [String]? = nil, count: Int? = nil, ageSeconds: Int? = nil
    ) async throws -> [String] {
        var body: JSONObject = ["type": .string(type)]
        if let ids { body["ids"] = .array(ids.map(JSONValue.string)) }
        if let count { body["count"] = .int(Int64(count)) }
        if let ageSeconds { body["ageSeconds"] = .int(Int64(ageSeconds)) }
        let reply = try await send(.POST, "/admin/delete", body: .object(body), idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Begins a transaction that commits late: it takes its stamp now (on Salesforce's clock)
    /// and becomes visible only at ``adminCommitTransaction(_:)``. It updates the given records
    /// (`ids`, or `count` random ones) with `fields` and creates `create` new ones.
    public func adminBeginTransaction(
        type: String, ids: [String]? = nil, count: Int? = nil, create: Int = 0, fields: JSONObject = [:]
    ) async throws -> HeldTransaction {
        var body: JSONObject = ["type": .string(type), "fields": .object(fields)]
        if let ids { body["ids"] = .array(ids.map(JSONValue.string)) }
        if let count { body["count"] = .int(Int64(count)) }
        if create > 0 { body["create"] = .int(Int64(create)) }
        let reply = try await send(.POST, "/admin/transactions", body: .object(body), idempotent: false)
        guard let id = reply.body.value(atPath: "transaction")?.stringValue else {
            throw RESTError(.malformedResponse, "POST /admin/transactions: no transaction id in the answer")
        }
        return HeldTransaction(
            id: id, ids: reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? [],
            stamp: reply.body.value(atPath: "stamp")?.stringValue)
    }

    /// Commits a held transaction: its records become visible with the stamp it took when it
    /// began. Returns the ids written (updates, then creates).
    @discardableResult
    public func adminCommitTransaction(_ id: String) async throws -> [String] {
        let reply = try await send(
            .POST, "/admin/transactions/\(Self.encode(id))/commit", idempotent: false)
        return reply.body.value(atPath: "ids")?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Drops a held transaction without writing anything.
    public func adminRollbackTransaction(_ id: String) async throws {
        _ = try await send(.DELETE, "/admin/transactions/\(Self.encode(id))", idempotent: true)
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
    /// `commitDelayMs`, `seed`.
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

/// A transaction held open on the reference server, from ``RESTClient/adminBeginTransaction(type:ids:count:create:fields:)``.
public struct HeldTransaction: Sendable, Hashable {
    /// Its id, for commit or rollback.
    public var id: String
    /// The existing records it updates.
    public var ids: [String]
    /// The stamp its records get (`…T12:00:05.000+0000`); nil on the ideal clock, which stamps
    /// them when it commits.
    public var stamp: String?
}
