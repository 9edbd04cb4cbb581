import BatonJSON
import BatonTime
import GRDB
import Hummingbird
import SOQL

/// `/admin` (same token): seed, touch and delete records, read stats, set faults. For tests and
/// demos; a real org has no such routes.
struct AdminRoutes: Sendable {
    let storage: RecordStorage
    let faults: FaultInjector
    let stats: ServerStats
    let held: HeldTransactions

    func register<Context: RequestContext>(on group: RouterGroup<Context>) {
        registerRecords(on: group)
        registerTransactions(on: group)
        registerStatsAndFaults(on: group)
    }

    /// Seed, touch, delete, reset and list records.
    func registerRecords<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.post("seed") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = body["type"]?.stringValue ?? ""
            let count = try Self.count(body["count"], max: 5_000_000)
            let timeStamps = try body["timeStamps"].map { try Self.count($0, max: 5_000_000) } ?? count
            let bytes = try body["bytes"].map { try Self.count($0, max: 100_000) } ?? 0
            let template = body["fields"]?.objectValue ?? [:]
            // How long ago the newest seeded record was last modified: a store of existing
            // records, as an org has, rather than records all modified just now.
            let age = try body["ageSeconds"].map { try Self.count($0, max: 10 * 365 * 86_400) } ?? 0
            if let schema = body["schema"] { try storage.extendSchema { try $0.merge(schema) } }
            let ids = try storage.seed(
                type: type, count: count, timeStamps: max(1, timeStamps), bytes: bytes, template: template,
                ageSeconds: age)
            var out: JSONObject = ["created": .int(Int64(ids.count))]
            if ids.count <= 1000 { out["ids"] = .array(ids.map(JSONValue.string)) }
            return .json(.ok, .object(out))
        }
        group.post("touch") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = try storage.object(body["type"]?.stringValue ?? "").name
            let fields = try storage.writable(body["fields"]?.objectValue ?? [:], type: type)
            // Stamped that long ago, as an import that sets the audit fields would leave them.
            let age = try body["ageSeconds"].map { try Self.count($0, max: 10 * 365 * 86_400) } ?? 0
            let ids = try storage.touch(
                type: type, ids: Self.ids(body), count: body["count"]?.intValue.map(Int.init), fields: fields,
                ageSeconds: age)
            return .json(.ok, ["ids": .array(ids.map(JSONValue.string))])
        }
        group.post("delete") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = try storage.object(body["type"]?.stringValue ?? "").name
            // `ageSeconds`: deleted that long ago in the delete log (on Salesforce's clock), a
            // test's shortcut to deletions older than the current minute.
            let age = max(0, body["ageSeconds"]?.intValue ?? 0)
            let stamp = age > 0 ? storage.transactionStartStamp().map { $0 - age * 1000 } : nil
            let ids = try RecordStorage.$startedStamp.withValue(stamp) {
                try storage.deleteRecords(
                    type: type, ids: Self.ids(body), count: body["count"]?.intValue.map(Int.init))
            }
            return .json(.ok, ["ids": .array(ids.map(JSONValue.string))])
        }
        // The delete log of a type purged before `before` (ms since 1970; now when absent), as an
        // administrator emptying the recycle bin: a getDeleted window starting earlier is refused.
        group.post("purgeDeleted") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = try storage.object(body["type"]?.stringValue ?? "").name
            let before = body["before"]?.intValue ?? storage.now()
            try storage.purgeDeleteLog(type: type, before: before)
            return .json(.ok, ["purgedBefore": .int(before)])
        }
        group.post("reset") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = try storage.object(body["type"]?.stringValue ?? "").name
            let removed = try storage.write { db -> Int in
                try db.execute(sql: "DELETE FROM records WHERE type = ?", arguments: [type])
                let removed = db.changesCount
                try db.execute(sql: "DELETE FROM deleted_records WHERE type = ?", arguments: [type])
                return removed
            }
            return .json(.ok, ["deleted": .int(Int64(removed))])
        }
        group.get("records") { request, _ -> Response in
            let type = try storage.object(request.uri.queryParameters.get("type") ?? "").name
            let records = try storage.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM records WHERE type = ? ORDER BY id", arguments: [type]
                )
                .map { JSONValue.object(try RecordStorage.fullRecord($0)) }
            }
            return .json(.ok, ["records": .array(records), "totalSize": .int(Int64(records.count))])
        }
    }

    /// Transactions held open to commit late.
    func registerTransactions<Context: RequestContext>(on group: RouterGroup<Context>) {
        // A transaction that commits late: `POST transactions` stamps it now (on Salesforce's
        // clock) and keeps its writes back; `POST transactions/ID/commit` makes them visible;
        // `DELETE transactions/ID` drops them.
        group.post("transactions") { request, _ -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let type = try storage.object(body["type"]?.stringValue ?? "").name
            let fields = try storage.writable(body["fields"]?.objectValue ?? [:], type: type)
            let creates = try body["create"].map { try Self.count($0, max: 10_000) } ?? 0
            let ids =
                body["ids"] != nil || body["count"] != nil
                ? try storage.read { db in
                    try storage.pick(
                        db, type: type, ids: Self.ids(body), count: body["count"]?.intValue.map(Int.init))
                } : []
            let stamp = storage.transactionStartStamp()
            let id = try held.begin(
                HeldTransactions.Held(type: type, ids: ids, creates: creates, fields: fields, stamp: stamp))
            return .json(
                .ok,
                [
                    "transaction": .string(id), "ids": .array(ids.map(JSONValue.string)),
                    "stamp": stamp.map { .string(DateTimeLiteral.format(milliseconds: $0)) } ?? .null,
                ])
        }
        group.post("transactions/:transaction/commit") { _, context -> Response in
            let transaction = try held.take(try context.parameters.require("transaction"))
            let ids = try storage.commit(transaction)
            return .json(.ok, ["ids": .array(ids.map(JSONValue.string))])
        }
        group.delete("transactions/:transaction") { _, context -> Response in
            _ = try held.take(try context.parameters.require("transaction"))
            return .json(.ok, ["rolledBack": true])
        }
    }

    /// Stats and faults.
    func registerStatsAndFaults<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.get("stats") { _, _ -> Response in
            var report = stats.report
            report.records = try storage.counts()
            return .json(.ok, try JSONValue(encoding: report))
        }
        group.post("stats/reset") { _, _ -> Response in
            stats.reset()
            return .json(.ok, ["reset": true])
        }
        group.get("faults") { _, _ -> Response in .json(.ok, try JSONValue(encoding: faults.settings)) }
        group.post("faults") { request, _ -> Response in
            var request = request
            faults.settings = try FaultSettings(body: try await request.jsonObjectBody())
            return .json(.ok, try JSONValue(encoding: faults.settings))
        }
        group.delete("faults") { _, _ -> Response in
            faults.settings = FaultSettings()
            return .json(.ok, try JSONValue(encoding: faults.settings))
        }
    }

    static func count(_ value: JSONValue?, max: Int) throws -> Int {
        guard let number = value?.intValue, number >= 0, number <= max else {
            throw SalesforceError(status: 400, "INVALID_FIELD", "expected a count between 0 and \(max)")
        }
        return Int(number)
    }

    static func ids(_ body: JSONObject) -> [String]? {
        body["ids"]?.arrayValue?.compactMap(\.stringValue)
    }
}

extension RecordStorage {
    /// Creates `count` records whose `LastModifiedDate`s take `timeStamps` distinct values
    /// (fewer values than records makes ties, also across page boundaries), the newest
    /// `ageSeconds` before now: one second apart on Salesforce's clock, as a load of that many
    /// transactions would leave them.
    ///
    /// A new type is declared, with `Number__c`, `Description` and the template's fields (typed by
    /// their values), so what is seeded can be queried.
    func seed(
        type: String, count: Int, timeStamps: Int, bytes: Int, template: JSONObject, ageSeconds: Int = 0
    ) throws -> [String] {
        guard RecordStorage.isTypeName(type) else { throw SalesforceError.notFound() }
        extendSchema { schema in
            schema.declare(type: type)
            let declared = schema.object(type)
            var examples = template
            examples["Number__c"] = examples["Number__c"] ?? .int(1)
            examples["Description"] = examples["Description"] ?? .string("")
            for (name, value) in examples where declared?.field(name) == nil {
                guard RecordStorage.isFieldName(name) else { continue }
                schema.declare(FieldDescription(name: name, type: .inferred(from: value)), on: type)
            }
        }
        let template = try writable(template, type: type)
        let type = try object(type).name
        let (first, step) = seedStamps(distinct: timeStamps, ageMillis: Int64(ageSeconds) * 1000)
        let padding = bytes > 0 ? String(repeating: "x", count: bytes) : nil
        return try write { db in
            var ids: [String] = []
            ids.reserveCapacity(count)
            let insert = try db.cachedStatement(
                sql:
                    "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES (?, ?, ?, ?, ?, ?)"
            )
            let firstSequence = try reserveSequences(db, type: type, count: count)
            for index in 0..<count {
                let id = RecordId.make(type: type, sequence: firstSequence + Int64(index))
                let stamp = first + Int64(index * timeStamps / max(count, 1)) * step
                var fields = template
                fields["Name"] = fields["Name"] ?? .string("\(type) \(index + 1)")
                fields["Number__c"] = .int(Int64(index + 1))
                if let padding { fields["Description"] = .string(padding) }
                try insert.execute(arguments: [id, type, stamp, stamp, stamp, fields.jsonString])
                ids.append(id)
            }
            return ids
        }
    }

    /// Reserves `count` consecutive id sequence numbers of `type`; returns the first.
    func reserveSequences(_ db: Database, type: String, count: Int) throws -> Int64 {
        try db.execute(
            sql: "INSERT INTO sequences (type, next) VALUES (?, 0) ON CONFLICT(type) DO NOTHING",
            arguments: [type])
        let last =
            try Int64.fetchOne(db, sql: "SELECT next FROM sequences WHERE type = ?", arguments: [type]) ?? 0
        try db.execute(sql: "UPDATE sequences SET next = next + ? WHERE type = ?", arguments: [count, type])
        return last + 1
    }

    /// The given ids, or `count` (default 1) random ids of `type`.
    func pick(_ db: Database, type: String, ids: [String]?, count: Int?) throws -> [String] {
        if let ids { return ids }
        return try String.fetchAll(
            db, sql: "SELECT id FROM records WHERE type = ? ORDER BY random() LIMIT ?",
            arguments: [type, count ?? 1])
    }

    /// Modifies records (the given ids, or `count` random ones), all in one transaction: merges
    /// `fields` and stamps them, `ageSeconds` before now when given (never after their
    /// creation). Returns the ids touched.
    func touch(type: String, ids: [String]?, count: Int?, fields: JSONObject, ageSeconds: Int = 0) throws
        -> [String]
    {
        let aged: Int64? =
            ageSeconds > 0
            ? {
                let stamp = now() - Int64(ageSeconds) * 1000
                return clock == .salesforce ? ServerClock.wholeSecond(stamp) : stamp
            }() : nil
        return try write { db in
            let targets = try pick(db, type: type, ids: ids, count: count)
            var touched: [String] = []
            for id in targets {
                guard try storedFields(db, type: type, id: id) != nil else { continue }
                try update(db, type: type, id: id, fields: fields)
                if let aged {
                    try db.execute(
                        sql: """
                            UPDATE records SET lastModified = ?, systemModstamp = ?, created = min(created, ?)
                            WHERE id = ?
                            """, arguments: [aged, aged, aged, id])
                }
                touched.append(id)
            }
            return touched
        }
    }

    /// Deletes records (the given ids, or `count` random ones) as the API does: remembered as
    /// deleted, their cascading children with them. Returns the ids deleted.
    func deleteRecords(type: String, ids: [String]?, count: Int?) throws -> [String] {
        try write { db in
            let targets = try pick(db, type: type, ids: ids, count: count)
            var deleted: [String] = []
            for id in targets {
                guard
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM records WHERE id = ? AND type = ?", arguments: [id, type])
                        == true
                else { continue }
                try delete(db, type: type, id: id)
                deleted.append(id)
            }
            return deleted
        }
    }
}
