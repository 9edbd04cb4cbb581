import GRDB
import SOQL

/// Translates a parsed SOQL query into SQL over the `records` table, so WHERE, ORDER BY, LIMIT
/// and OFFSET run in SQLite (on the time-stamp index where they can).
struct QueryTranslator {
    /// The SQL that selects the row ids of the matching records in order, and its arguments.
    static func idQuery(for query: SOQLQuery) throws -> (sql: String, arguments: StatementArguments) {
        guard RecordStorage.isTypeName(query.object) else {
            throw SalesforceError(
                status: 400, "INVALID_TYPE", "sObject type '\(query.object.prefix(80))' is not supported")
        }
        var arguments = StatementArguments([query.object])
        var sql = "SELECT rowid FROM records WHERE type = ?"
        if let condition = query.condition {
            sql += " AND (\(try translate(condition, &arguments)))"
        }
        var keys = query.orderBy.map { item -> String in
            var key = column(item.field) + (item.ascending ? " ASC" : " DESC")
            if let nullsFirst = item.nullsFirst { key += nullsFirst ? " NULLS FIRST" : " NULLS LAST" }
            return key
        }
        keys.append("id ASC")
        sql += " ORDER BY " + keys.joined(separator: ", ")
        if let limit = query.limit {
            sql += " LIMIT \(limit)"
        } else if query.offset != nil {
            sql += " LIMIT -1"
        }
        if let offset = query.offset { sql += " OFFSET \(offset)" }
        return (sql, arguments)
    }

    /// The SQL expression for a field: a column for server-managed fields, JSON otherwise.
    static func column(_ field: String) -> String {
        switch field.lowercased() {
        case "id": return "id"
        case "lastmodifieddate": return "lastModified"
        case "systemmodstamp": return "systemModstamp"
        case "createddate": return "created"
        default: return "json_extract(fields, '$.\(field)')"
        }
    }

    static func isTimeStamp(_ field: String) -> Bool {
        ["lastmodifieddate", "systemmodstamp", "createddate"].contains(field.lowercased())
    }

    static func translate(_ condition: Condition, _ arguments: inout StatementArguments) throws -> String {
        switch condition {
        case .and(let left, let right):
            return "(\(try translate(left, &arguments))) AND (\(try translate(right, &arguments)))"
        case .or(let left, let right):
            return "(\(try translate(left, &arguments))) OR (\(try translate(right, &arguments)))"
        case .not(let inner):
            return "NOT (\(try translate(inner, &arguments)))"
        case .comparison(let field, let op, let literal):
            let expression = column(field)
            let value = try databaseValue(literal, field: field)
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
            return "\(column(field)) \(negated ? "NOT LIKE" : "LIKE") ? ESCAPE '\\'"
        case .isIn(let field, let values, let negated):
            let expression = column(field)
            for value in values { arguments += [try databaseValue(value, field: field)] }
            let list = Array(repeating: "?", count: values.count).joined(separator: ", ")
            return "\(expression) \(negated ? "NOT IN" : "IN") (\(list))"
        }
    }

    static func databaseValue(_ literal: Literal, field: String) throws -> DatabaseValue {
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
            return isTimeStamp(field) ? millis.databaseValue : text.databaseValue
        case .date(let text):
            if isTimeStamp(field), let millis = DateTimeLiteral.milliseconds(text + "T00:00:00Z") {
                return millis.databaseValue
            }
            return text.databaseValue
        }
    }
}
