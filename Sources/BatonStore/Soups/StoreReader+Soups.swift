import GRDB

extension StoreReader {
    /// Every registered soup, by name.
    public func soups() throws -> [SoupDescription] {
        try Row.fetchAll(db, sql: "SELECT id, name, indexSpecs FROM soup_registry ORDER BY name").map(
            Self.soup(from:))
    }

    /// The soup called `name`, or `nil`.
    public func soupIfExists(_ name: String) throws -> SoupDescription? {
        try Row.fetchOne(
            cached("SELECT id, name, indexSpecs FROM soup_registry WHERE name = ?"), arguments: [name]
        )
        .map(Self.soup(from:))
    }

    /// The soup called `name`.
    ///
    /// - Throws: `unknownSoup` when there is none.
    public func soup(_ name: String) throws -> SoupDescription {
        if let cached = soupCache[name] { return cached }
        guard let soup = try soupIfExists(name) else {
            throw StoreError(
                .unknownSoup, "no soup named '\(name)'; register it first (baton store soup create)")
        }
        return soup
    }

    static func soup(from row: Row) throws -> SoupDescription {
        let id: Int64 = row["id"]
        let specsText: String = row["indexSpecs"]
        let specs = try JSONValue(parsing: specsText).arrayValue?.compactMap { value -> IndexSpec? in
            guard let object = value.objectValue, let path = object["path"]?.stringValue,
                let type = object["type"]?.stringValue.flatMap(IndexType.init(rawValue:))
            else { return nil }
            return IndexSpec(path: path, type: type)
        }
        return SoupDescription(name: row["name"], indexSpecs: specs ?? [], tableName: "soup_\(id)")
    }

    /// The record with this entry id, or `nil`.
    public func entry(_ entryId: Int64, in soupName: String) throws -> SoupEntry? {
        let soup = try soup(soupName)
        return try Row.fetchOne(
            cached("SELECT id, json, lastModified FROM \(soup.tableName) WHERE id = ?"), arguments: [entryId]
        ).map(Self.entry(from:))
    }

    /// The first record whose `path` equals `value`, or `nil`.
    public func entry(where path: String, equals value: JSONValue, in soupName: String) throws -> SoupEntry? {
        try query(SoupQuery(where: [.exact(path, value)], limit: 1), in: soupName).first
    }

    /// The records matching `query`, in its order.
    public func query(_ query: SoupQuery, in soupName: String) throws -> [SoupEntry] {
        let (sql, arguments) = try select(query, in: soupName)
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.entry(from:))
    }

    /// SQLite's plan for `query` (`EXPLAIN QUERY PLAN`, its steps joined by "; "), to see
    /// which index it uses.
    public func explain(_ query: SoupQuery, in soupName: String) throws -> String {
        let (sql, arguments) = try select(query, in: soupName)
        return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments)
            .map { $0["detail"] as String }.joined(separator: "; ")
    }

    /// The statement that reads `query`'s records.
    func select(_ query: SoupQuery, in soupName: String) throws -> (String, StatementArguments) {
        let soup = try soup(soupName)
        let (whereSQL, arguments) = try Self.whereClause(query, soup: soup)
        var sql = "SELECT id, json, lastModified FROM \(soup.tableName)\(whereSQL)"
        sql += try Self.orderClause(query, soup: soup)
        if let limit = query.limit {
            sql += " LIMIT \(max(0, limit)) OFFSET \(max(0, query.offset))"
        } else if query.offset > 0 {
            sql += " LIMIT -1 OFFSET \(query.offset)"
        }
        return (sql, arguments)
    }

    /// How many records match `query` (its limit and order are ignored).
    public func count(_ query: SoupQuery = .all, in soupName: String) throws -> Int {
        let soup = try soup(soupName)
        let (whereSQL, arguments) = try Self.whereClause(query, soup: soup)
        return try Int.fetchOne(
            db, sql: "SELECT count(*) FROM \(soup.tableName)\(whereSQL)", arguments: arguments)
            ?? 0
    }

    /// Calls `body` with successive pages of the records matching `query`, in entry-id order,
    /// holding at most `pageSize` records in memory. Stops early when `body` returns false.
    public func forEachPage(
        of query: SoupQuery, in soupName: String, pageSize: Int = 500, _ body: ([SoupEntry]) throws -> Bool
    ) throws {
        let soup = try soup(soupName)
        var lastId: Int64 = 0
        while true {
            var (whereSQL, arguments) = try Self.whereClause(query, soup: soup)
            whereSQL += whereSQL.isEmpty ? " WHERE id > ?" : " AND id > ?"
            arguments += [lastId]
            let page = try Row.fetchAll(
                db,
                sql:
                    "SELECT id, json, lastModified FROM \(soup.tableName)\(whereSQL) ORDER BY id LIMIT \(pageSize)",
                arguments: arguments
            ).map(Self.entry(from:))
            guard let last = page.last else { return }
            lastId = last.entryId
            guard try body(page) else { return }
            if page.count < pageSize { return }
        }
    }

    /// Records with local changes (`__local__` true), optionally only those of one soup's sync.
    public func dirtyEntries(in soupName: String, limit: Int? = nil) throws -> [SoupEntry] {
        try query(SoupQuery(where: [.exact(LocalFlags.local, true)], limit: limit), in: soupName)
    }

    /// Entry ids of the records with local changes.
    public func dirtyEntryIds(in soupName: String) throws -> [Int64] {
        let soup = try soup(soupName)
        return try Int64.fetchAll(
            db,
            sql:
                "SELECT id FROM \(soup.tableName) WHERE \(soup.expression(for: LocalFlags.local)) = 1 ORDER BY id"
        )
    }

    /// A row of `SELECT id, json, lastModified`, read by column index.
    static func entry(from row: Row) throws -> SoupEntry {
        try entry(entryId: row[0], json: row[1], lastModified: row[2])
    }

    static func entry(entryId: Int64, json: String, lastModified: Int64) throws -> SoupEntry {
        guard case .object(let record) = try JSONValue(parsing: json) else {
            throw StoreError(.malformedRecord, "a stored record is not a JSON object")
        }
        return SoupEntry(entryId: entryId, record: record, lastModified: lastModified)
    }

    static func whereClause(_ query: SoupQuery, soup: SoupDescription) throws -> (String, StatementArguments)
    {
        guard !query.conditions.isEmpty else { return ("", []) }
        var parts: [String] = []
        var arguments = StatementArguments()
        for condition in query.conditions {
            let path = condition.path
            guard soup.isIndexed(path) else {
                throw StoreError(
                    .notIndexed,
                    "'\(path)' is not an indexed path of soup '\(soup.name)'; add an index spec for it")
            }
            let expression = soup.expression(for: path)
            switch condition {
            case .exact(_, let value):
                if value.isNull {
                    parts.append("\(expression) IS NULL")
                } else {
                    parts.append("\(expression) = ?")
                    arguments += [value.databaseValue]
                }
            case .range(_, let from, let to):
                if let from {
                    parts.append("\(expression) >= ?")
                    arguments += [from.databaseValue]
                }
                if let to {
                    parts.append("\(expression) <= ?")
                    arguments += [to.databaseValue]
                }
            case .like(_, let pattern):
                parts.append("\(expression) LIKE ?")
                arguments += [pattern]
            case .isIn(_, let values):
                if values.isEmpty {
                    parts.append("0")
                } else {
                    parts.append(
                        "\(expression) IN (\(Array(repeating: "?", count: values.count).joined(separator: ",")))"
                    )
                    for value in values { arguments += [value.databaseValue] }
                }
            }
        }
        return (" WHERE " + parts.joined(separator: " AND "), arguments)
    }

    static func orderClause(_ query: SoupQuery, soup: SoupDescription) throws -> String {
        var keys: [String] = []
        for order in query.orderBy {
            let direction = order.ascending ? "ASC" : "DESC"
            if order.path == SoupQuery.entryIdPath {
                keys.append("id \(direction)")
                continue
            }
            guard soup.isIndexed(order.path) else {
                throw StoreError(
                    .notIndexed,
                    "'\(order.path)' is not an indexed path of soup '\(soup.name)'; add an index spec for it")
            }
            keys.append("\(soup.expression(for: order.path)) \(direction)")
        }
        if !query.orderBy.contains(where: { $0.path == SoupQuery.entryIdPath }) { keys.append("id ASC") }
        return " ORDER BY " + keys.joined(separator: ", ")
    }
}

extension JSONValue {
    /// The SQLite value that `json_extract` yields for this JSON value, so comparisons with an
    /// indexed path match exactly (booleans are 0/1, arrays and objects their JSON text).
    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .string(let s): return s.databaseValue
        case .int(let i): return i.databaseValue
        case .double(let d): return d.databaseValue
        case .bool(let b): return (b ? 1 : 0).databaseValue
        case .array, .object: return jsonString.databaseValue
        }
    }
}
