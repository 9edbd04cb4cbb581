import Foundation
import GRDB

extension StoreTransaction {
    /// Registers a soup with its indexed paths. Registering an existing soup with the same specs
    /// does nothing; new specs are added as new indexes.
    ///
    /// - Throws: `invalidName` or `invalidIndexPath` for bad input.
    @discardableResult
    public func registerSoup(_ name: String, indexSpecs: [IndexSpec]) throws -> SoupDescription {
        soupCache[name] = nil
        soupWriters[name] = nil
        try Names.validate(name, what: "soup name")
        for spec in indexSpecs { try IndexSpec.validate(path: spec.path) }
        if let existing = try soupIfExists(name) {
            let missing = indexSpecs.filter { spec in !existing.indexSpecs.contains { $0.path == spec.path } }
            guard !missing.isEmpty else { return existing }
            try db.execute(
                sql: "UPDATE soup_registry SET indexSpecs = ? WHERE name = ?",
                arguments: [Self.specsJSON(existing.indexSpecs + missing), name])
            soupCache[name] = nil
            let soup = try soup(name)
            try Self.addIndexes(soup, existing: Set(existing.columns.map(\.name)), db: db)
            return soup
        }
        try db.execute(
            sql: "INSERT INTO soup_registry (name, indexSpecs, created) VALUES (?, ?, ?)",
            arguments: [name, Self.specsJSON(indexSpecs), WallClock.nowMillis()])
        let soup = try soup(name)
        let columns = soup.columns.map { ",\n    \($0.name)" }.joined()
        try db.execute(
            sql: """
                CREATE TABLE \(soup.tableName) (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    json TEXT NOT NULL,
                    created INTEGER NOT NULL,
                    lastModified INTEGER NOT NULL\(columns)
                )
                """)
        try WriteGuards.install(on: soup.tableName, db: db)
        try Self.addIndexes(soup, existing: nil, db: db)
        return soup
    }

    /// Gives `soup`'s table each column it lacks (the table has `existing`, or is new when nil),
    /// filled from the records already there in one pass, and every index it should have.
    static func addIndexes(_ soup: SoupDescription, existing: Set<String>?, db: Database) throws {
        if let existing {
            let added = soup.columns.filter { !existing.contains($0.name) }
            for column in added {
                try db.execute(sql: "ALTER TABLE \(soup.tableName) ADD COLUMN \(column.name)")
            }
            if !added.isEmpty {
                let fills = added.map { "\($0.name) = \(IndexSpec.sqlExpression(path: $0.path))" }
                try db.execute(sql: "UPDATE \(soup.tableName) SET \(fills.joined(separator: ", "))")
            }
        }
        for column in soup.columns {
            try db.execute(
                sql:
                    "CREATE INDEX IF NOT EXISTS \(soup.indexName(column: column.name)) ON \(soup.tableName)(\(column.name))"
            )
        }
        for spec in soup.indexSpecs where soup.column(for: spec.path) == nil {
            try db.execute(
                sql:
                    "CREATE INDEX IF NOT EXISTS \(soup.expressionIndexName(path: spec.path)) ON \(soup.tableName)(\(spec.sqlExpression))"
            )
        }
    }

    static func specsJSON(_ specs: [IndexSpec]) -> String {
        JSONValue.array(specs.map { .object(["path": .string($0.path), "type": .string($0.type.rawValue)]) })
            .jsonString
    }

    /// Drops a soup and all its records.
    ///
    /// - Throws: `unknownSoup` when there is none.
    public func dropSoup(_ name: String) throws {
        let soup = try soup(name)
        soupCache[name] = nil
        soupWriters[name] = nil
        try db.execute(sql: "DROP TABLE \(soup.tableName)")
        try db.execute(sql: "DELETE FROM soup_registry WHERE name = ?", arguments: [name])
    }

    /// Inserts or updates a record.
    ///
    /// - With `entryId`, updates that entry (`entryNotFound` when it is gone).
    /// - Else with `externalIdPath` (an indexed path such as `Id`) and a non-null value there,
    ///   updates the record having the same value, or inserts one.
    /// - Else inserts.
    @discardableResult
    public func upsert(
        _ record: JSONObject, into soupName: String, entryId: Int64? = nil, externalIdPath: String? = nil
    ) throws -> SoupEntry {
        try writer(soupName).upsert(record, entryId: entryId, externalIdPath: externalIdPath)
    }

    /// Upserts a record as the server sent it: what `upsert(LocalFlags.clean(record, syncId:
    /// syncId), …)` stores, without copying the record to set its flags. Returns the entry id.
    @discardableResult
    public func upsertClean(
        _ record: JSONObject, syncId: Int64?, into soupName: String, externalIdPath: String? = nil
    ) throws -> Int64 {
        try writer(soupName).write(
            record, replacing: LocalFlags.cleanMembers(syncId: syncId), entryId: nil,
            externalIdPath: externalIdPath
        ).entryId
    }

    /// Upserts a record as the server sent it (as ``upsertClean(_:syncId:into:externalIdPath:)``)
    /// into the entry `entryId`, or as a new entry when it is nil, without looking anything up:
    /// for a caller that looked the record up itself (``storedEntry(where:equals:in:)``).
    @discardableResult
    public func upsertClean(_ record: JSONObject, syncId: Int64?, into soupName: String, entryId: Int64?)
        throws
        -> Int64
    {
        try writer(soupName).write(
            record, replacing: LocalFlags.cleanMembers(syncId: syncId), entryId: entryId, externalIdPath: nil
        ).entryId
    }

    /// The first entry whose indexed `path` equals `value`, or nil, through a statement prepared
    /// once per transaction: what a page's save looks up for each record it merges.
    public func storedEntry(where path: String, equals value: JSONValue, in soupName: String) throws
        -> SoupEntry?
    {
        try writer(soupName).existing(at: path, equals: value)
    }

    /// Upserts many records in this transaction, through one prepared statement per kind.
    @discardableResult
    public func upsert(_ records: [JSONObject], into soupName: String, externalIdPath: String? = nil) throws
        -> [SoupEntry]
    {
        let writer = try writer(soupName)
        return try records.map { try writer.upsert($0, entryId: nil, externalIdPath: externalIdPath) }
    }

    /// The writer of `soupName` for this transaction (its statements prepared once).
    func writer(_ soupName: String) throws -> SoupWriter {
        if let writer = soupWriters[soupName] { return writer }
        let writer = try SoupWriter(soup: try soup(soupName), db: db)
        soupWriters[soupName] = writer
        return writer
    }

    /// Deletes entries by id; returns how many existed.
    @discardableResult
    public func delete(entryIds: [Int64], from soupName: String) throws -> Int {
        let soup = try soup(soupName)
        let statement = try cached("DELETE FROM \(soup.tableName) WHERE id = ?")
        var deleted = 0
        for id in entryIds {
            try statement.execute(arguments: [id])
            deleted += db.changesCount
        }
        return deleted
    }
}

/// Name rules shared by soups, participants and syncs: `[A-Za-z0-9._-]{1,64}`.
public enum Names {
    /// True when `name` follows the rules.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
            && name != "." && name != ".."
    }

    /// Throws `invalidName` unless `name` follows the rules.
    public static func validate(_ name: String, what: String) throws {
        guard isValid(name) else {
            throw StoreError(
                .invalidName, "invalid \(what) '\(name.prefix(80))'; use 1-64 of A-Z a-z 0-9 . _ -")
        }
    }
}
