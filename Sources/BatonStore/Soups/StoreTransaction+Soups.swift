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
        try Names.validate(name, what: "soup name")
        for spec in indexSpecs { try IndexSpec.validate(path: spec.path) }
        if let existing = try soupIfExists(name) {
            let missing = indexSpecs.filter { spec in !existing.indexSpecs.contains { $0.path == spec.path } }
            guard !missing.isEmpty else { return existing }
            let merged = existing.indexSpecs + missing
            try db.execute(
                sql: "UPDATE soup_registry SET indexSpecs = ? WHERE name = ?",
                arguments: [Self.specsJSON(merged), name])
            for spec in missing { try createIndex(spec, table: existing.tableName) }
            soupCache[name] = nil
            return try soup(name)
        }
        try db.execute(
            sql: "INSERT INTO soup_registry (name, indexSpecs, created) VALUES (?, ?, ?)",
            arguments: [name, Self.specsJSON(indexSpecs), WallClock.nowMillis()])
        let soup = try soup(name)
        try db.execute(
            sql: """
                CREATE TABLE \(soup.tableName) (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    json TEXT NOT NULL,
                    created INTEGER NOT NULL,
                    lastModified INTEGER NOT NULL
                )
                """)
        for path in SoupDescription.builtInPaths {
            try createIndex(IndexSpec(path: path, type: .json1), table: soup.tableName)
        }
        for spec in indexSpecs { try createIndex(spec, table: soup.tableName) }
        return soup
    }

    private func createIndex(_ spec: IndexSpec, table: String) throws {
        let indexName = "\(table)_\(spec.path.replacingOccurrences(of: ".", with: "_"))"
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(indexName) ON \(table)(\(spec.sqlExpression))")
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
        let soup = try soup(soupName)
        return try upsert(record, into: soup, entryId: entryId, externalIdPath: externalIdPath)
    }

    /// Upserts many records in this transaction; faster than one call each.
    @discardableResult
    public func upsert(_ records: [JSONObject], into soupName: String, externalIdPath: String? = nil) throws
        -> [SoupEntry]
    {
        let soup = try soup(soupName)
        return try records.map { try upsert($0, into: soup, entryId: nil, externalIdPath: externalIdPath) }
    }

    func upsert(_ record: JSONObject, into soup: SoupDescription, entryId: Int64?, externalIdPath: String?)
        throws
        -> SoupEntry
    {
        let now = WallClock.nowMillis()
        let json = record.jsonString
        var targetId = entryId
        if targetId == nil, let externalIdPath {
            guard soup.isIndexed(externalIdPath) else {
                throw StoreError(
                    .notIndexed,
                    "external id path '\(externalIdPath)' is not indexed in soup '\(soup.name)'; add an index spec for it"
                )
            }
            if let value = JSONValue.object(record).value(atPath: externalIdPath), !value.isNull {
                targetId = try Int64.fetchOne(
                    cached(
                        "SELECT id FROM \(soup.tableName) WHERE \(IndexSpec.sqlExpression(path: externalIdPath)) = ? LIMIT 1"
                    ),
                    arguments: [value.databaseValue])
            }
        }
        if let targetId {
            try cached("UPDATE \(soup.tableName) SET json = ?, lastModified = ? WHERE id = ?")
                .execute(arguments: [json, now, targetId])
            guard db.changesCount > 0 else {
                throw StoreError(.entryNotFound, "soup '\(soup.name)' has no entry \(targetId)")
            }
            return SoupEntry(entryId: targetId, record: record, lastModified: now)
        }
        try cached("INSERT INTO \(soup.tableName) (json, created, lastModified) VALUES (?, ?, ?)")
            .execute(arguments: [json, now, now])
        return SoupEntry(entryId: db.lastInsertedRowID, record: record, lastModified: now)
    }

    /// Deletes entries by id; returns how many existed.
    @discardableResult
    public func delete(entryIds: [Int64], from soupName: String) throws -> Int {
        let soup = try soup(soupName)
        var deleted = 0
        for id in entryIds {
            try cached("DELETE FROM \(soup.tableName) WHERE id = ?").execute(arguments: [id])
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
