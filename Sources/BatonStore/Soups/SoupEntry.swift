/// One record of a soup with the store's bookkeeping.
public struct SoupEntry: Sendable, Hashable {
    /// The store-assigned id, stable for the record's life (SmartStore's `_soupEntryId`).
    public var entryId: Int64
    /// The record.
    public var record: JSONObject
    /// When the store last wrote the record, in milliseconds since 1970.
    public var lastModified: Int64

    /// Makes an entry from its id, record and last-modified time.
    public init(entryId: Int64, record: JSONObject, lastModified: Int64) {
        self.entryId = entryId
        self.record = record
        self.lastModified = lastModified
    }
}

/// A registered soup: its name and indexed paths.
///
/// Its table holds each record's JSON text, and beside it one column per indexed path that
/// Swift fills from the record it already holds, each with an index: the built-in paths and
/// every `string`, `integer` and `floating` spec. A column holds exactly what
/// `json_extract(json, '$.path')` would give (no affinity: booleans as 0/1, arrays and objects
/// as their JSON text), so queries answer as they did on expression indexes, and SQLite parses
/// no JSON on insert. A `json1` spec stays an expression index on `json_extract`.
public struct SoupDescription: Sendable, Hashable {
    /// The soup's name.
    public var name: String
    /// The indexed paths, in registration order.
    public var indexSpecs: [IndexSpec]
    let tableName: String

    /// The paths every soup indexes for the sync engine, whatever it registered.
    static let builtInPaths = [LocalFlags.local, LocalFlags.syncId]
    static let builtInColumns = [LocalFlags.local: "c_local", LocalFlags.syncId: "c_sync_id"]

    /// True when `path` can be used in a query.
    public func isIndexed(_ path: String) -> Bool {
        Self.builtInPaths.contains(path) || indexSpecs.contains { $0.path == path }
    }

    /// The column that holds `path`'s value, when one does.
    func column(for path: String) -> String? {
        if let builtIn = Self.builtInColumns[path] { return builtIn }
        guard let index = indexSpecs.firstIndex(where: { $0.path == path }), indexSpecs[index].type != .json1
        else { return nil }
        return "c\(index)"
    }

    /// What SQL reads `path` with: its column, or `json_extract` for a `json1` spec.
    func expression(for path: String) -> String {
        column(for: path) ?? IndexSpec.sqlExpression(path: path)
    }

    /// Every column beside the JSON text, with the path it holds, in table order.
    var columns: [(name: String, path: String)] {
        var seen = Set(Self.builtInPaths)
        var columns = Self.builtInPaths.map { (name: Self.builtInColumns[$0]!, path: $0) }
        for (index, spec) in indexSpecs.enumerated()
        where spec.type != .json1 && seen.insert(spec.path).inserted {
            columns.append((name: "c\(index)", path: spec.path))
        }
        return columns
    }

    /// The name of the index on `column`.
    func indexName(column: String) -> String { "\(tableName)_\(column)" }

    /// The name of the expression index on `path` (how every index was named before columns).
    func expressionIndexName(path: String) -> String {
        "\(tableName)_\(path.replacingOccurrences(of: ".", with: "_"))"
    }
}
