import BatonJSON
import BatonLocking
import BatonTime
import GRDB
import SOQL

/// The reference server's records, in SQLite (a file, or memory): one table for every type,
/// fields as JSON, server-managed fields as columns so time-stamp filters and ordering use an
/// index.
final class RecordStorage: Sendable {
    /// A pool for a file (reads run beside each other and beside the one write, each on its own
    /// snapshot, so a long query holds up nobody), a queue in memory (where SQLite has no WAL).
    let database: any DatabaseWriter
    /// Records created, changed or read by id through the API, newest first: what
    /// `GET sobjects/TYPE` answers as `recentItems`.
    let recentItems = RecentItems()
    /// How records are stamped.
    let clock: ServerClock
    /// The wall clock the stamps are read from (ms since 1970).
    let now: @Sendable () -> Int64
    /// On the ideal clock, the last stamp handed out, so every write gets a strictly later one.
    private let lastTimeStamp = Locked<Int64>(0)
    /// The stamp of the write transaction running now, on Salesforce's clock. Write
    /// transactions run one at a time on ``database``, so one slot is enough.
    private let transactionStamp = Locked<Int64?>(nil)

    /// The stamp the transaction of the request being handled was given when it started, when
    /// that was before its write runs (a commit held back by a fault): its records get it.
    @TaskLocal static var startedStamp: Int64?

    /// The types and fields the server knows; queries and writes are checked against it.
    private let schemaState: Locked<ServerSchema>
    /// Writes stamped and not committed yet: the delete log covers no window past them.
    let inFlight = InFlightStamps()

    init(
        path: String?, schema: ServerSchema = .standard, clock: ServerClock = .salesforce,
        now: @escaping @Sendable () -> Int64 = WallClock.nowMillis
    ) throws {
        self.clock = clock
        self.now = now
        schemaState = Locked(schema)
        var configuration = Configuration()
        configuration.label = "baton.server"
        database =
            try path.map { try DatabasePool(path: $0, configuration: configuration) }
            ?? DatabaseQueue(configuration: configuration)
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS records (
                        id TEXT PRIMARY KEY,
                        type TEXT NOT NULL,
                        created INTEGER NOT NULL,
                        lastModified INTEGER NOT NULL,
                        systemModstamp INTEGER NOT NULL,
                        fields TEXT NOT NULL
                    );
                    CREATE INDEX IF NOT EXISTS records_type_modified ON records(type, lastModified, id);
                    CREATE TABLE IF NOT EXISTS sequences (type TEXT PRIMARY KEY, next INTEGER NOT NULL);
                    -- Deleted ids, so a call on one answers ENTITY_IS_DELETED (an id never seen
                    -- answers NOT_FOUND), as Salesforce tells its recycle bin from nothing.
                    CREATE TABLE IF NOT EXISTS deleted_records (id TEXT PRIMARY KEY, type TEXT NOT NULL);
                    """)
            try Self.createDeleteLog(db)
        }
        let newest =
            try database.read { db in try Int64.fetchOne(db, sql: "SELECT max(lastModified) FROM records") }
            ?? 0
        lastTimeStamp.withLock { $0 = newest }
    }

    /// The stamp of a record written now: its transaction's on Salesforce's clock; on the ideal
    /// clock, one later than every stamp handed out before (the wall clock, bumped on ties).
    func recordStamp() -> Int64 {
        if let stamp = transactionStamp.withLock({ $0 }) { return stamp }
        if let stamp = clock.transactionStamp(now: now()) { return stamp }
        let now = now()
        return lastTimeStamp.withLock { last in
            last = max(now, last + 1)
            return last
        }
    }

    /// The stamp a transaction starting now gets (nil on the ideal clock, which stamps each
    /// record when it is written): taken by a request whose commit is held back.
    func transactionStartStamp() -> Int64? { clock.transactionStamp(now: now()) }

    /// Stamps for `distinct` values of a seed whose newest is `age` ms before now: returns the
    /// first and the step between two values (whole seconds on Salesforce's clock).
    func seedStamps(distinct: Int, ageMillis: Int64) -> (first: Int64, step: Int64) {
        let count = Int64(max(distinct, 1))
        let newest = now() - ageMillis
        switch clock {
        case .salesforce:
            return (ServerClock.wholeSecond(newest) - (count - 1) * 1000, 1000)
        case .ideal:
            guard ageMillis == 0 else { return (newest - count, 1) }
            return lastTimeStamp.withLock { last in
                let first = max(newest - count, last + 1)
                last = first + count - 1
                return (first, 1)
            }
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try database.read(body)
    }

    /// Runs `body` in a write transaction. On Salesforce's clock every record it writes gets one
    /// stamp: the request's ``startedStamp`` when its commit was held back, else the second
    /// the transaction starts in.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        let started = Self.startedStamp
        return try database.write { db in
            try stamping(started) { try body(db) }
        }
    }

    /// Runs `body` in a transaction that commits only when it returns true (stamped as
    /// ``write(_:)``).
    func transaction(_ body: (Database) throws -> Bool) throws {
        let started = Self.startedStamp
        try database.writeWithoutTransaction { db in
            try stamping(started) {
                try db.inTransaction {
                    try body(db) ? .commit : .rollback
                }
            }
        }
    }

    /// Runs `work` (inside the one write, so one at a time) with the transaction's stamp set.
    private func stamping<T>(_ started: Int64?, _ work: () throws -> T) rethrows -> T {
        let stamp = clock == .ideal ? nil : (started ?? clock.transactionStamp(now: now()))
        transactionStamp.withLock { $0 = stamp }
        defer { transactionStamp.withLock { $0 = nil } }
        return try work()
    }

    // MARK: - Schema

    /// The schema as it is now.
    var schema: ServerSchema { schemaState.withLock { $0 } }

    /// Changes the schema (the admin API declares types and fields).
    func extendSchema(_ change: (inout ServerSchema) throws -> Void) rethrows {
        try schemaState.withLock { try change(&$0) }
    }

    /// The declared type named `name` (any case); `404 NOT_FOUND` otherwise, as Salesforce
    /// answers a URL naming an unknown sObject type.
    func object(_ name: String) throws -> ObjectDescription {
        guard let object = schema.object(name) else { throw SalesforceError.notFound() }
        return object
    }

    /// `fields` checked against `type`'s declaration and keyed by the canonical names: an unknown
    /// field is `INVALID_FIELD`, a server-managed one `INVALID_FIELD_FOR_INSERT_UPDATE`, a value
    /// of the wrong kind `JSON_PARSER_ERROR`, one that breaks the field's rules
    /// `STRING_TOO_LONG`, `INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST` or `REQUIRED_FIELD_MISSING`.
    func writable(_ fields: JSONObject, type: String) throws -> JSONObject {
        try Self.writable(fields, for: try object(type))
    }

    static func writable(_ fields: JSONObject, for object: ObjectDescription) throws -> JSONObject {
        var out = JSONObject(minimumCapacity: fields.count)
        for (key, value) in fields {
            guard let field = object.field(key) else {
                throw SalesforceError(
                    status: 400, "INVALID_FIELD",
                    "No such column '\(key.prefix(80))' on sobject of type \(object.name)",
                    fields: [key])
            }
            if field.serverManaged { throw SalesforceError.serverManaged(field.name) }
            guard field.type.accepts(value) else {
                throw SalesforceError.badRequest(
                    "Cannot deserialize instance of \(field.type.rawValue) from \(value.kindName) value for field \(field.name)"
                )
            }
            if let violation = field.violation(by: value) { throw violation }
            out[field.name] = value
        }
        return out
    }

    /// `REQUIRED_FIELD_MISSING` when a new record of `object` would lack a required field.
    static func checkRequired(_ fields: JSONObject, for object: ObjectDescription) throws {
        let missing = object.fields.filter {
            $0.required && [.null, .string("")].contains(fields[$0.name] ?? .null)
        }.map(\.name)
        if !missing.isEmpty { throw SalesforceError.requiredFieldsMissing(missing) }
    }

    // MARK: - Single-record operations (inside a transaction)

    static func isFieldName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 80 else { return false }
        guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_")
        }
    }

    static func isTypeName(_ name: String) -> Bool { isFieldName(name) }

    func nextId(_ db: Database, type: String) throws -> String {
        try db.execute(
            sql:
                "INSERT INTO sequences (type, next) VALUES (?, 1) ON CONFLICT(type) DO UPDATE SET next = next + 1",
            arguments: [type])
        let sequence =
            try Int64.fetchOne(db, sql: "SELECT next FROM sequences WHERE type = ?", arguments: [type]) ?? 1
        return RecordId.make(type: type, sequence: sequence)
    }

    /// Creates a record; returns its new id.
    func create(_ db: Database, type: String, fields: JSONObject) throws -> String {
        let object = try object(type)
        let fields = try Self.writable(fields, for: object)
        try Self.checkRequired(fields, for: object)
        try checkLookups(db, fields, of: object)
        let type = object.name
        let id = try nextId(db, type: type)
        let stamp = recordStamp()
        try db.execute(
            sql:
                "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [id, type, stamp, stamp, stamp, fields.jsonString])
        recentItems.touch(type: type, id: id)
        return id
    }

    /// Merges `fields` into an existing record and bumps its time stamps.
    func update(_ db: Database, type: String, id: String, fields: JSONObject) throws {
        let object = try object(type)
        let fields = try Self.writable(fields, for: object)
        let type = object.name
        guard let current = try storedFields(db, type: type, id: id) else {
            throw try missing(db, id: id)
        }
        try checkLookups(db, fields, of: object)
        var merged = current
        for (key, value) in fields { merged[key] = value }
        let stamp = recordStamp()
        try db.execute(
            sql: "UPDATE records SET fields = ?, lastModified = ?, systemModstamp = ? WHERE id = ?",
            arguments: [merged.jsonString, stamp, stamp, id])
        recentItems.touch(type: type, id: id)
    }

    /// Creates or updates the record whose `field` equals `value`.
    func upsert(_ db: Database, type: String, field: String, value: String, fields: JSONObject) throws -> (
        id: String, created: Bool
    ) {
        let field = try externalIdField(field, of: type)
        var body = fields
        if let given = body[field], given.stringValue != value {
            throw SalesforceError(
                status: 400, "INVALID_FIELD", "The external id in the body does not match the URL",
                fields: [field])
        }
        body[field] = nil
        if field.lowercased() == "id" {
            try update(db, type: type, id: value, fields: body)
            return (value, false)
        }
        if let id = try id(db, type: type, field: field, value: value) {
            try update(db, type: type, id: id, fields: body)
            return (id, false)
        }
        body[field] = .string(value)
        return (try create(db, type: type, fields: body), true)
    }

    func ensureIndex(_ db: Database, field: String) throws {
        try db.execute(
            sql:
                "CREATE INDEX IF NOT EXISTS records_ext_\(field) ON records(type, json_extract(fields, '$.\(field)'))"
        )
    }

    /// Deletes a record; `ENTITY_IS_DELETED` when it was deleted before, `NOT_FOUND` when there
    /// never was one (or it is of another type).
    func delete(_ db: Database, type: String?, id: String) throws {
        let found = try String.fetchOne(
            db, sql: "SELECT type FROM records WHERE id = ? AND (? IS NULL OR type = ?)",
            arguments: [id, type, type])
        guard let found else { throw try missing(db, id: id) }
        try db.execute(sql: "DELETE FROM records WHERE id = ?", arguments: [id])
        try logDeleted(db, id: id, type: found)
        // Master-detail children (and Account's Contacts) go with their parent.
        for (childType, field) in schema.cascadingLookups(to: found) {
            let children = try String.fetchAll(
                db, sql: "SELECT id FROM records WHERE type = ? AND json_extract(fields, '$.\(field)') = ?",
                arguments: [childType, id])
            for child in children { try delete(db, type: childType, id: child) }
        }
    }

    /// `ENTITY_IS_DELETED` when a lookup in `fields` points to a deleted record, as Salesforce
    /// answers a write that links to one.
    func checkLookups(_ db: Database, _ fields: JSONObject, of object: ObjectDescription) throws {
        for (name, value) in fields {
            guard let id = value.stringValue, object.field(name)?.type == .reference,
                try Bool.fetchOne(db, sql: "SELECT 1 FROM deleted_records WHERE id = ?", arguments: [id])
                    == true
            else { continue }
            throw SalesforceError(status: 400, "ENTITY_IS_DELETED", "entity is deleted", fields: [name])
        }
    }

    /// Why there is no record `id`: deleted (`ENTITY_IS_DELETED`) or never there (`NOT_FOUND`).
    func missing(_ db: Database, id: String) throws -> SalesforceError {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM deleted_records WHERE id = ?", arguments: [id]) == true {
            return SalesforceError(status: 404, "ENTITY_IS_DELETED", "entity is deleted")
        }
        return SalesforceError.notFound()
    }

    /// The id of the one `type` record whose `field` is `value`; nil when none, `MULTIPLE_CHOICES`
    /// when several.
    func id(_ db: Database, type: String, field: String, value: String) throws -> String? {
        let field = try externalIdField(field, of: type)
        let type = try object(type).name
        if field.lowercased() == "id" {
            return try String.fetchOne(
                db, sql: "SELECT id FROM records WHERE id = ? AND type = ?", arguments: [value, type])
        }
        try ensureIndex(db, field: field)
        let existing = try String.fetchAll(
            db,
            sql: "SELECT id FROM records WHERE type = ? AND json_extract(fields, '$.\(field)') = ? LIMIT 2",
            arguments: [type, value])
        if existing.count > 1 {
            throw SalesforceError(
                status: 300, "MULTIPLE_CHOICES", "More than one record has this external id", fields: [field])
        }
        return existing.first
    }

    /// The canonical name of a field that can identify a record of `type` (`Id`, or a text
    /// field); `404 NOT_FOUND` as Salesforce answers an unknown external id field.
    func externalIdField(_ name: String, of type: String) throws -> String {
        guard let field = try object(type).field(name),
            field.name == "Id" || (!field.serverManaged && field.type != .reference)
        else {
            throw SalesforceError.notFound(
                "Provided external ID field does not exist or is not accessible: \(name.prefix(80))")
        }
        return field.name
    }

    func storedFields(_ db: Database, type: String, id: String) throws -> JSONObject? {
        guard
            let text = try String.fetchOne(
                db, sql: "SELECT fields FROM records WHERE id = ? AND type = ?", arguments: [id, type])
        else { return nil }
        return try JSONObject(parsingObject: text)
    }

    /// The whole record as the API shows it: its fields plus the server-managed ones.
    func fullRecord(_ db: Database, type: String, id: String) throws -> JSONObject? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM records WHERE id = ? AND type = ?", arguments: [id, type])
        else { return nil }
        return try Self.fullRecord(row)
    }

    static func fullRecord(_ row: Row) throws -> JSONObject {
        var record = try JSONObject(parsingObject: row["fields"])
        record["Id"] = .string(row["id"])
        record["LastModifiedDate"] = .string(DateTimeLiteral.format(milliseconds: row["lastModified"]))
        record["SystemModstamp"] = .string(DateTimeLiteral.format(milliseconds: row["systemModstamp"]))
        record["CreatedDate"] = .string(DateTimeLiteral.format(milliseconds: row["created"]))
        return record
    }

    /// Record counts by type.
    func counts() throws -> [String: Int] {
        try read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT type, count(*) AS n FROM records GROUP BY type") {
                counts[row["type"]] = row["n"]
            }
            return counts
        }
    }
}

/// Wall-clock milliseconds without Foundation.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The most recently used records of each type, newest first (at most ``limit`` a type); ids of
/// records since deleted are skipped when read.
final class RecentItems: Sendable {
    static let limit = 200
    private let ids = Locked<[String: [String]]>([:])

    func touch(type: String, id: String) {
        ids.withLock { all in
            var list = all[type, default: []]
            list.removeAll { $0 == id }
            list.insert(id, at: 0)
            if list.count > Self.limit { list.removeLast(list.count - Self.limit) }
            all[type] = list
        }
    }

    func ids(type: String) -> [String] { ids.withLock { $0[type] ?? [] } }
}
