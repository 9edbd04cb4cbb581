import GRDB

/// How a soup's records sit in its table, for a baseline that writes the same table shape
/// without the store (the ingest bench's raw loop).
@_spi(Bench)
extension SoupDescription {
    /// The soup's table.
    public var table: String { tableName }

    /// The statements that make the soup's table and its indexes in another database (not its
    /// write guards: the raw loop measures SQLite's own work for the data).
    public func schemaStatements(in reader: StoreReader) throws -> [String] {
        try String.fetchAll(
            reader.db,
            sql:
                "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY type DESC, name",
            arguments: [tableName])
    }

    /// Finds the entry whose `path` has a value: one argument, the value.
    public func lookupSQL(path: String) -> String {
        "SELECT id FROM \(tableName) WHERE \(expression(for: path)) = ? LIMIT 1"
    }

    /// Inserts a record: the arguments are ``insertArguments(json:record:now:)``.
    public var insertSQL: String {
        let names = columns.map(\.name)
        return
            "INSERT INTO \(tableName) (json, created, lastModified\(names.map { ", " + $0 }.joined())) VALUES (?, ?, ?\(String(repeating: ", ?", count: names.count)))"
    }

    /// The insert's arguments for a record whose JSON text is `json`.
    public func insertArguments(json: String, record: JSONObject, now: Int64) -> StatementArguments {
        StatementArguments(
            boxed: [json, now, now] + columns.map { SoupWriter.value(of: record, at: $0.path)?.databaseValue }
        )
    }
}
