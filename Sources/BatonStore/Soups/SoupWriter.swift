import GRDB

/// Writes the records of one soup inside one transaction: the insert, the update and each
/// external-id lookup are prepared once, and each record's column values are read from the
/// record in hand (no JSON parsing by SQLite).
final class SoupWriter {
    let soup: SoupDescription
    let db: Database
    private let columns: [(name: String, path: String)]
    private let insert: Statement
    private let update: Statement
    private var lookups: [String: Statement] = [:]

    init(soup: SoupDescription, db: Database) throws {
        self.soup = soup
        self.db = db
        columns = soup.columns
        let names = columns.map(\.name)
        insert = try db.cachedStatement(sql: soup.insertSQL)
        update = try db.cachedStatement(
            sql:
                "UPDATE \(soup.tableName) SET json = ?, lastModified = ?\(names.map { ", \($0) = ?" }.joined()) WHERE id = ?"
        )
    }

    func upsert(_ record: JSONObject, entryId: Int64?, externalIdPath: String?) throws -> SoupEntry {
        let now = WallClock.nowMillis()
        var targetId = entryId
        if targetId == nil, let externalIdPath {
            let lookup = try lookup(externalIdPath)
            if let value = Self.value(of: record, at: externalIdPath), !value.isNull {
                targetId = try Int64.fetchOne(lookup, arguments: [value.databaseValue])
            }
        }
        // Stored text is parsed again, never compared as text: keys in the dictionary's order.
        var values: [DatabaseValue] = [JSONValue.object(record).jsonText(sortedKeys: false).databaseValue]
        values.reserveCapacity(columns.count + 3)
        if targetId == nil { values.append(now.databaseValue) }
        values.append(now.databaseValue)
        for column in columns {
            values.append(Self.value(of: record, at: column.path)?.databaseValue ?? .null)
        }
        if let targetId {
            values.append(targetId.databaseValue)
            try update.execute(arguments: StatementArguments(values))
            guard db.changesCount > 0 else {
                throw StoreError(.entryNotFound, "soup '\(soup.name)' has no entry \(targetId)")
            }
            return SoupEntry(entryId: targetId, record: record, lastModified: now)
        }
        try insert.execute(arguments: StatementArguments(values))
        return SoupEntry(entryId: db.lastInsertedRowID, record: record, lastModified: now)
    }

    /// The statement that finds the entry whose `path` has a value.
    private func lookup(_ path: String) throws -> Statement {
        if let statement = lookups[path] { return statement }
        guard soup.isIndexed(path) else {
            throw StoreError(
                .notIndexed,
                "external id path '\(path)' is not indexed in soup '\(soup.name)'; add an index spec for it")
        }
        let statement = try db.cachedStatement(sql: soup.lookupSQL(path: path))
        lookups[path] = statement
        return statement
    }

    /// The value at a dotted path through nested objects, as `json_extract` reads it.
    static func value(of record: JSONObject, at path: String) -> JSONValue? {
        path.utf8.contains(UInt8(ascii: ".")) ? JSONValue.object(record).value(atPath: path) : record[path]
    }
}
