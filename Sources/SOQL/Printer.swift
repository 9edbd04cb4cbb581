extension SOQLQuery {
    /// The query as SOQL text, in a canonical form that parses back to an equal query.
    public var soql: String {
        var out = "SELECT "
        out += fields.map { item in
            switch item {
            case .field(let name): return name
            case .subquery(let query): return "(\(query.soql))"
            case .count: return "COUNT()"
            case .aggregate(let function, let field): return "\(function.rawValue)(\(field))"
            }
        }.joined(separator: ", ")
        out += " FROM \(object)"
        if let condition { out += " WHERE \(condition.soql)" }
        if !orderBy.isEmpty {
            out += " ORDER BY "
            out += orderBy.map { item in
                var text = item.field
                if item.explicitDirection { text += item.ascending ? " ASC" : " DESC" }
                if let nullsFirst = item.nullsFirst { text += nullsFirst ? " NULLS FIRST" : " NULLS LAST" }
                return text
            }.joined(separator: ", ")
        }
        if let limit { out += " LIMIT \(limit)" }
        if let offset { out += " OFFSET \(offset)" }
        return out
    }
}

extension Condition {
    /// Binding strength: OR < AND < NOT/predicate.
    var precedence: Int {
        switch self {
        case .or: return 1
        case .and: return 2
        default: return 3
        }
    }

    /// The condition as SOQL text, parenthesised only where needed to keep its shape.
    public var soql: String {
        switch self {
        case .comparison(let field, let op, let value): return "\(field) \(op.rawValue) \(value.soql)"
        case .like(let field, let pattern, let negated):
            return "\(field) \(negated ? "NOT LIKE" : "LIKE") \(pattern.soql)"
        case .isIn(let field, let values, let negated):
            return "\(field) \(negated ? "NOT IN" : "IN") (\(values.map(\.soql).joined(separator: ", ")))"
        case .and(let left, let right):
            return "\(left.operand(above: 2, isRight: false)) AND \(right.operand(above: 2, isRight: true))"
        case .or(let left, let right):
            return "\(left.operand(above: 1, isRight: false)) OR \(right.operand(above: 1, isRight: true))"
        case .not(let inner): return inner.precedence < 3 ? "NOT (\(inner.soql))" : "NOT \(inner.soql)"
        }
    }

    /// Parenthesised when it binds looser than its parent, or equally on the right (the parser
    /// groups to the left, so `a AND (b AND c)` must keep its parentheses).
    func operand(above parent: Int, isRight: Bool) -> String {
        if precedence < parent || (isRight && precedence == parent) { return "(\(soql))" }
        return soql
    }
}

extension Literal {
    /// The literal as SOQL text.
    public var soql: String {
        switch self {
        case .string(let value):
            var out = "'"
            let chars = Array(value)
            var i = 0
            while i < chars.count {
                let c = chars[i]
                switch c {
                case "'": out += "\\'"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                case "\\":
                    if i + 1 < chars.count, chars[i + 1] == "%" || chars[i + 1] == "_" {
                        out += "\\" + String(chars[i + 1])
                        i += 1
                    } else {
                        out += "\\\\"
                    }
                default: out.append(c)
                }
                i += 1
            }
            return out + "'"
        case .number(let text), .date(let text), .dateTime(let text): return text
        case .boolean(let value): return value ? "true" : "false"
        case .null: return "null"
        }
    }
}
