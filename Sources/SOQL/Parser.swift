extension SOQLQuery {
    /// The deepest nesting of parentheses and subqueries accepted.
    public static let maxNesting = 32
    /// The longest query text accepted, in characters.
    public static let maxLength = 100_000
    /// The most ANDs and ORs a query may join its conditions with. A chain of them is a tree as
    /// deep as it is long, which every later step (printing, planning, SQLite's own parser,
    /// whose expressions nest at most 1,000 deep) walks recursively; Salesforce, too, refuses
    /// a query that is too complicated.
    public static let maxLogicalOperators = 500

    /// Parses a query.
    ///
    /// - Throws: ``SOQLError`` naming the position and the token for anything outside the subset.
    public init(parsing text: String) throws {
        guard text.count <= Self.maxLength else {
            throw SOQLError(
                position: Self.maxLength, token: "…",
                message: "query longer than \(Self.maxLength) characters")
        }
        var parser = Parser(tokens: try Lexer.tokenize(text))
        self = try parser.parseQuery(depth: 0)
        try parser.expectEnd()
    }
}

struct Parser {
    let tokens: [Token]
    var index = 0
    /// The ANDs and ORs read so far (``SOQLQuery/maxLogicalOperators``).
    var logicalOperators = 0

    init(tokens: [Token]) {
        self.tokens = tokens
    }

    var current: Token { tokens[index] }

    func error(_ message: String) -> SOQLError {
        SOQLError(position: current.position, token: current.raw, message: message)
    }

    mutating func advance() -> Token {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    func isKeyword(_ word: String) -> Bool { current.kind == .keyword && current.text == word }
    func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol && current.text == symbol }

    mutating func expectKeyword(_ word: String) throws {
        guard isKeyword(word) else { throw error("expected \(word)") }
        _ = advance()
    }

    mutating func expectSymbol(_ symbol: String) throws {
        guard isSymbol(symbol) else { throw error("expected '\(symbol)'") }
        _ = advance()
    }

    mutating func expectEnd() throws {
        guard current.kind == .end else { throw error("unexpected token after the query") }
    }

    mutating func identifier(_ what: String) throws -> String {
        guard current.kind == .identifier else { throw error("expected \(what)") }
        return advance().text
    }

    mutating func parseQuery(depth: Int) throws -> SOQLQuery {
        guard depth <= SOQLQuery.maxNesting else { throw error("nested deeper than \(SOQLQuery.maxNesting)") }
        try expectKeyword("SELECT")
        var fields: [SelectItem] = []
        repeat {
            if isSymbol("(") {
                _ = advance()
                fields.append(.subquery(try parseQuery(depth: depth + 1)))
                try expectSymbol(")")
            } else {
                let name = try identifier("a field name")
                if name.uppercased() == "COUNT", isSymbol("(") {
                    _ = advance()
                    try expectSymbol(")")
                    fields.append(.count)
                } else if let function = AggregateFunction(rawValue: name.uppercased()), isSymbol("(") {
                    _ = advance()
                    let field = try identifier("a field name")
                    try expectSymbol(")")
                    fields.append(.aggregate(function, field))
                } else {
                    fields.append(.field(name))
                }
            }
        } while try consumeComma()
        if fields.contains(.count), fields.count > 1 {
            throw error("COUNT() must be the only item of its SELECT list")
        }
        let aggregates = fields.filter {
            if case .aggregate = $0 { return true }
            return false
        }
        if !aggregates.isEmpty, aggregates.count < fields.count {
            throw error("a SELECT list with MAX() or MIN() holds only aggregates (GROUP BY is not supported)")
        }
        try expectKeyword("FROM")
        let object = try identifier("an object name")
        var query = SOQLQuery(fields: fields, object: object)
        if isKeyword("WHERE") {
            _ = advance()
            query.condition = try parseOr(depth: depth)
        }
        if isKeyword("ORDER") {
            _ = advance()
            try expectKeyword("BY")
            repeat {
                var item = OrderItem(field: try identifier("a field to order by"))
                if isKeyword("ASC") || isKeyword("DESC") {
                    item.ascending = advance().text == "ASC"
                    item.explicitDirection = true
                }
                if isKeyword("NULLS") {
                    _ = advance()
                    if isKeyword("FIRST") {
                        item.nullsFirst = true
                    } else if isKeyword("LAST") {
                        item.nullsFirst = false
                    } else {
                        throw error("expected FIRST or LAST")
                    }
                    _ = advance()
                }
                query.orderBy.append(item)
            } while try consumeComma()
        }
        if isKeyword("LIMIT") {
            _ = advance()
            query.limit = try nonNegativeInteger("LIMIT")
        }
        if isKeyword("OFFSET") {
            _ = advance()
            query.offset = try nonNegativeInteger("OFFSET")
        }
        return query
    }

    mutating func consumeComma() throws -> Bool {
        guard isSymbol(",") else { return false }
        _ = advance()
        return true
    }

    mutating func nonNegativeInteger(_ clause: String) throws -> Int {
        guard current.kind == .number, let value = Int(current.text), value >= 0 else {
            throw error("expected a non-negative integer after \(clause)")
        }
        _ = advance()
        return value
    }

    mutating func parseOr(depth: Int) throws -> Condition {
        var left = try parseAnd(depth: depth)
        while isKeyword("OR") {
            try countLogicalOperator()
            _ = advance()
            left = .or(left, try parseAnd(depth: depth))
        }
        return left
    }

    mutating func parseAnd(depth: Int) throws -> Condition {
        var left = try parseUnary(depth: depth)
        while isKeyword("AND") {
            try countLogicalOperator()
            _ = advance()
            left = .and(left, try parseUnary(depth: depth))
        }
        return left
    }

    mutating func countLogicalOperator() throws {
        logicalOperators += 1
        guard logicalOperators <= SOQLQuery.maxLogicalOperators else {
            throw error(
                "more than \(SOQLQuery.maxLogicalOperators) ANDs and ORs; the query is too complicated (use IN for a list of values)"
            )
        }
    }

    mutating func parseUnary(depth: Int) throws -> Condition {
        guard depth <= SOQLQuery.maxNesting else { throw error("nested deeper than \(SOQLQuery.maxNesting)") }
        if isKeyword("NOT") {
            _ = advance()
            return .not(try parseUnary(depth: depth + 1))
        }
        if isSymbol("(") {
            _ = advance()
            let inner = try parseOr(depth: depth + 1)
            try expectSymbol(")")
            return inner
        }
        return try parsePredicate()
    }

    mutating func parsePredicate() throws -> Condition {
        let field = try identifier("a field name")
        if isKeyword("LIKE") {
            _ = advance()
            return .like(field: field, pattern: try parseLiteral(), negated: false)
        }
        if isKeyword("IN") {
            _ = advance()
            return .isIn(field: field, values: try parseList(), negated: false)
        }
        if isKeyword("NOT") {
            _ = advance()
            if isKeyword("IN") {
                _ = advance()
                return .isIn(field: field, values: try parseList(), negated: true)
            }
            if isKeyword("LIKE") {
                _ = advance()
                return .like(field: field, pattern: try parseLiteral(), negated: true)
            }
            throw error("expected IN or LIKE after NOT")
        }
        guard current.kind == .symbol, let op = ComparisonOperator(rawValue: current.text) else {
            throw error("expected a comparison operator")
        }
        _ = advance()
        return .comparison(field: field, op: op, value: try parseLiteral())
    }

    mutating func parseList() throws -> [Literal] {
        try expectSymbol("(")
        var values: [Literal] = []
        repeat {
            values.append(try parseLiteral())
        } while try consumeComma()
        try expectSymbol(")")
        return values
    }

    mutating func parseLiteral() throws -> Literal {
        let token = current
        switch token.kind {
        case .string: _ = advance(); return .string(token.text)
        case .number: _ = advance(); return .number(token.text)
        case .date: _ = advance(); return .date(token.text)
        case .dateTime: _ = advance(); return .dateTime(token.text)
        case .keyword where token.text == "TRUE": _ = advance(); return .boolean(true)
        case .keyword where token.text == "FALSE": _ = advance(); return .boolean(false)
        case .keyword where token.text == "NULL": _ = advance(); return .null
        default: throw error("expected a value")
        }
    }
}
