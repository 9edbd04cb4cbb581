import GRDB
import SOQL

/// Translates a resolved SOQL query into SQL over the `records` table, so WHERE, ORDER BY,
/// LIMIT and OFFSET run in SQLite (on the time-stamp index where they can). A relationship path
/// (`Account.Name`) becomes a subselect of the parent record.
struct QueryTranslator {
    let schema: ServerSchema
    /// Compare time stamps as Salesforce does, ignoring milliseconds (its stamps are whole
    /// seconds): a literal's milliseconds are dropped.
    var wholeSeconds = false

    /// The SQL that selects the row ids of the matching records in order, and its arguments;
    /// for a child subquery, only the children of `parentId` through `lookup`.
    func idQuery(
        for resolved: ResolvedQuery, childOf link: (lookup: FieldDescription, parentId: String)? = nil
    )
        throws -> (sql: String, arguments: StatementArguments)
    {
        let query = resolved.query
        let object = resolved.object
        var (sql, arguments) = try selection("r0.rowid", for: resolved, childOf: link)
        // A field ordered by again changes no order: it is left out, so ORDER BY has at most a
        // term per field (SQLite takes at most 2,000).
        var ordered = Set<String>()
        var keys: [String] = []
        for item in query.orderBy {
            let column = try column(item.field, on: object).sql
            guard ordered.insert(column).inserted else { continue }
            var key = column + (item.ascending ? " ASC" : " DESC")
            if let nullsFirst = item.nullsFirst { key += nullsFirst ? " NULLS FIRST" : " NULLS LAST" }
            keys.append(key)
        }
        keys.append("r0.id ASC")
        sql += " ORDER BY " + keys.joined(separator: ", ")
        if let limit = query.limit {
            sql += " LIMIT \(limit)"
        } else if query.offset != nil {
            sql += " LIMIT -1"
        }
        if let offset = query.offset { sql += " OFFSET \(offset)" }
        return (sql, arguments)
    }

    /// The SQL that computes a query's `MAX(…)` and `MIN(…)` over the matching records, one
    /// column per aggregate, and its arguments.
    func aggregateQuery(for resolved: ResolvedQuery) throws -> (sql: String, arguments: StatementArguments) {
        let columns = try resolved.query.fields.map { item -> String in
            guard case .aggregate(let function, let path) = item else {
                throw SalesforceError.malformedQuery("only aggregates may be selected beside MAX() and MIN()")
            }
            return "\(function.rawValue.lowercased())(\(try column(path, on: resolved.object).sql))"
        }
        return try selection(columns.joined(separator: ", "), for: resolved, childOf: nil)
    }

    /// `SELECT columns FROM records r0` restricted to the query's type, `link` and WHERE.
    private func selection(
        _ columns: String, for resolved: ResolvedQuery,
        childOf link: (lookup: FieldDescription, parentId: String)?
    ) throws -> (sql: String, arguments: StatementArguments) {
        var arguments = StatementArguments([resolved.object.name])
        var sql = "SELECT \(columns) FROM records r0 WHERE r0.type = ?"
        if let link {
            sql += " AND \(Self.column(link.lookup, alias: "r0")) = ?"
            arguments += [link.parentId]
        }
        if let condition = resolved.query.condition {
            sql += " AND (\(try translate(condition, on: resolved.object, &arguments)))"
        }
        return (sql, arguments)
    }

    /// The SQL expression for a field path on `object` (the outermost alias `r0`) and the field
    /// it ends on.
    func column(_ path: String, on object: ObjectDescription) throws -> (sql: String, field: FieldDescription)
    {
        let (item, field) = try schema.resolve(path: path, on: object)
        return (Self.expression(item, alias: "r0", depth: 0), field)
    }

    private static func expression(_ item: ResolvedItem, alias: String, depth: Int) -> String {
        switch item {
        case .field(let field):
            return column(field, alias: alias)
        case .parent(let lookup, _, let inner):
            let parent = "r\(depth + 1)"
            return
                "(SELECT \(expression(inner, alias: parent, depth: depth + 1)) FROM records \(parent) WHERE \(parent).id = \(column(lookup, alias: alias)))"
        case .children:
            return "NULL"
        }
    }

    /// A field of the record at `alias`: a column for server-managed fields, JSON otherwise.
    static func column(_ field: FieldDescription, alias: String) -> String {
        switch field.name.lowercased() {
        case "id": return "\(alias).id"
        case "lastmodifieddate": return "\(alias).lastModified"
        case "systemmodstamp": return "\(alias).systemModstamp"
        case "createddate": return "\(alias).created"
        default: return "json_extract(\(alias).fields, '$.\(field.name)')"
        }
    }

    static func isTimeStamp(_ field: String) -> Bool {
        ["lastmodifieddate", "systemmodstamp", "createddate"].contains(field.lowercased())
    }

    /// The operands of the chain of ANDs (or ORs) that `condition` heads, left to right: the
    /// parser groups a chain to the left, so its operands hang off the left spine.
    static func chain(_ condition: Condition) -> [Condition] {
        var rights: [Condition] = []
        var node = condition
        while true {
            switch (condition, node) {
            case (.and, .and(let left, let right)), (.or, .or(let left, let right)):
                rights.append(right)
                node = left
            default:
                return [node] + rights.reversed()
            }
        }
    }

    func translate(
        _ condition: Condition, on object: ObjectDescription, _ arguments: inout StatementArguments
    )
        throws -> String
    {
        switch condition {
        case .and, .or:
            // A chain of one connective as one flat list: `(a) OR (b) OR (c)`, not
            // `((a) OR (b)) OR (c)`, whose parentheses nest as deep as the chain is long
            // (SQLite's parser overflows its stack at about 100).
            let connective = if case .and = condition { " AND " } else { " OR " }
            return try Self.chain(condition).map { "(\(try translate($0, on: object, &arguments)))" }
                .joined(separator: connective)
        case .not(let inner):
            return "NOT (\(try translate(inner, on: object, &arguments)))"
        case .comparison(let field, let op, let literal):
            let (expression, described) = try column(field, on: object)
            let value = try databaseValue(literal, field: described.name)
            if value.isNull {
                switch op {
                case .equal: return "\(expression) IS NULL"
                case .notEqual: return "\(expression) IS NOT NULL"
                default: return "0"
                }
            }
            arguments += [value]
            switch op {
            case .notEqual: return "(\(expression) IS NULL OR \(expression) != ?)"
            default: return "\(expression) \(op.rawValue) ?"
            }
        case .like(let field, let pattern, let negated):
            guard case .string(let text) = pattern else {
                throw SalesforceError.malformedQuery("LIKE needs a string pattern")
            }
            arguments += [text]
            return "\(try column(field, on: object).sql) \(negated ? "NOT LIKE" : "LIKE") ? ESCAPE '\\'"
        case .isIn(let field, let values, let negated):
            let (expression, described) = try column(field, on: object)
            for value in values { arguments += [try databaseValue(value, field: described.name)] }
            let list = Array(repeating: "?", count: values.count).joined(separator: ", ")
            return "\(expression) \(negated ? "NOT IN" : "IN") (\(list))"
        }
    }

    func databaseValue(_ literal: Literal, field: String) throws -> DatabaseValue {
        switch literal {
        case .null: return .null
        case .boolean(let value): return (value ? 1 : 0).databaseValue
        case .string(let text): return text.databaseValue
        case .number(let text):
            if let int = Int64(text) { return int.databaseValue }
            if let double = Double(text) { return double.databaseValue }
            throw SalesforceError.malformedQuery("invalid number \(text)")
        case .dateTime(let text):
            guard let millis = DateTimeLiteral.milliseconds(text) else {
                throw SalesforceError.malformedQuery("invalid date-time \(text)")
            }
            guard Self.isTimeStamp(field) else { return text.databaseValue }
            return (wholeSeconds ? ServerClock.wholeSecond(millis) : millis).databaseValue
        case .date(let text):
            if Self.isTimeStamp(field), let millis = DateTimeLiteral.milliseconds(text + "T00:00:00Z") {
                return millis.databaseValue
            }
            return text.databaseValue
        }
    }
}
