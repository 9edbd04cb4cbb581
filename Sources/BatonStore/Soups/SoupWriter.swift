import BatonJSON
import GRDB

/// Writes the records of one soup inside one transaction: the insert, the update and each
/// external-id lookup are prepared once, and each record's column values are read from the
/// record in hand (no JSON parsing by SQLite).
final class SoupWriter {
    let soup: SoupDescription
    let db: Database
    private let columns: [(name: String, path: String)]
    /// Each column's path split at its first dot, once per writer, not once per record.
    private let columnPaths: [ColumnPath]
    private let insert: Statement
    private let update: Statement
    private var lookups: [String: Statement] = [:]
    private var entryLookups: [String: Statement] = [:]

    init(soup: SoupDescription, db: Database) throws {
        self.soup = soup
        self.db = db
        columns = soup.columns
        columnPaths = soup.columns.map { ColumnPath($0.path) }
        let names = columns.map(\.name)
        insert = try db.cachedStatement(sql: soup.insertSQL)
        update = try db.cachedStatement(
            sql:
                "UPDATE \(soup.tableName) SET json = ?, lastModified = ?\(names.map { ", \($0) = ?" }.joined()) WHERE id = ?"
        )
    }

    func upsert(_ record: JSONObject, entryId: Int64?, externalIdPath: String?) throws -> SoupEntry {
        let (id, now) = try write(record, replacing: [], entryId: entryId, externalIdPath: externalIdPath)
        return SoupEntry(entryId: id, record: record, lastModified: now)
    }

    /// Writes `record` with `members` in place of any of the same name (a nil value leaves the
    /// name out), as if they had been set in the record first, without copying the record;
    /// returns the entry id and its time stamp.
    func write(
        _ record: JSONObject, replacing members: [(key: String, value: JSONValue?)], entryId: Int64?,
        externalIdPath: String?
    ) throws -> (entryId: Int64, lastModified: Int64) {
        // Lengths first: most names are not a member's, and differ in length from all of them.
        func member(named key: String) -> (key: String, value: JSONValue?)? {
            let count = key.utf8.count
            return members.first { $0.key.utf8.count == count && $0.key == key }
        }
        func value(at path: ColumnPath) -> JSONValue? {
            if !members.isEmpty, let member = member(named: path.head) {
                guard let tail = path.tail else { return member.value }
                return member.value?.value(atPath: tail)
            }
            return path.tail == nil ? record[path.path] : JSONValue.object(record).value(atPath: path.path)
        }
        let now = WallClock.nowMillis()
        var targetId = entryId
        if targetId == nil, let externalIdPath {
            let lookup = try lookup(externalIdPath)
            if let value = value(at: ColumnPath(externalIdPath)), !value.isNull {
                targetId = try Int64.fetchOne(lookup, arguments: [value.databaseValue])
            }
        }
        // Stored text is parsed again, never compared as text: keys in the dictionary's order.
        var text = JSONTextWriter(capacity: 512)
        text.raw("{")
        var first = true
        for (key, element) in record where members.isEmpty || member(named: key) == nil {
            if !first { text.raw(",") }
            first = false
            text.string(key)
            text.raw(":")
            text.value(element, sortedKeys: false)
        }
        for case (let key, let element?) in members {
            if !first { text.raw(",") }
            first = false
            text.string(key)
            text.raw(":")
            text.value(element, sortedKeys: false)
        }
        text.raw("}")
        var values: [DatabaseValue] = []
        values.reserveCapacity(columns.count + 3)
        if targetId == nil { values.append(now.databaseValue) }
        values.append(now.databaseValue)
        for path in columnPaths {
            values.append(value(at: path)?.databaseValue ?? .null)
        }
        if let targetId {
            values.append(targetId.databaseValue)
            try update.run(text: text.bytes, binding: values, in: db)
            guard db.changesCount > 0 else {
                throw StoreError(.entryNotFound, "soup '\(soup.name)' has no entry \(targetId)")
            }
            return (targetId, now)
        }
        try insert.run(text: text.bytes, binding: values, in: db)
        return (db.lastInsertedRowID, now)
    }

    /// The first entry whose indexed `path` equals `value`, or nil; its text is parsed only
    /// when there is one.
    func existing(at path: String, equals value: JSONValue) throws -> SoupEntry? {
        guard !value.isNull else { return nil }
        let statement: Statement
        if let prepared = entryLookups[path] {
            statement = prepared
        } else {
            guard soup.isIndexed(path) else {
                throw StoreError(
                    .notIndexed,
                    "'\(path)' is not an indexed path of soup '\(soup.name)'; add an index spec for it")
            }
            statement = try db.cachedStatement(
                sql:
                    "SELECT id, json, lastModified FROM \(soup.tableName) WHERE \(soup.expression(for: path)) = ? LIMIT 1"
            )
            entryLookups[path] = statement
        }
        guard
            let (entryId, json, lastModified) = try statement.firstEntry(binding: value.databaseValue, in: db)
        else { return nil }
        return try StoreReader.entry(entryId: entryId, json: json, lastModified: lastModified)
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

extension StatementArguments {
    /// Arguments from values already boxed. GRDB's initializer for a sequence of one concrete
    /// type maps through a key path that is instantiated on every call (7% of an ingest's
    /// samples); this one maps with a closure.
    init(boxed values: [(any DatabaseValueConvertible)?]) {
        self.init(values)
    }
}

/// A path split at its first dot: the member it starts with, and the rest.
private struct ColumnPath {
    let path: String
    let head: String
    let tail: String?

    init(_ path: String) {
        self.path = path
        if let dot = path.utf8.firstIndex(of: UInt8(ascii: ".")) {
            head = String(path[..<dot])
            tail = String(path[path.utf8.index(after: dot)...])
        } else {
            head = path
            tail = nil
        }
    }
}
