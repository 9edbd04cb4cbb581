/// One token of a SOQL query.
struct Token: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case identifier
        case keyword
        case string
        case number
        case date
        case dateTime
        case symbol
        case end
    }

    var kind: Kind
    /// The text: uppercased for keywords, unescaped for strings, as written otherwise.
    var text: String
    /// The raw text as written.
    var raw: String
    var position: Int
}

/// Splits a query into tokens; keywords are case-insensitive.
struct Lexer {
    static let keywords: Set<String> = [
        "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "LIKE", "IN", "ORDER", "BY", "ASC", "DESC", "NULLS",
        "FIRST",
        "LAST", "LIMIT", "OFFSET", "TRUE", "FALSE", "NULL",
    ]

    static func tokenize(_ text: String) throws -> [Token] {
        let chars = Array(text)
        var tokens: [Token] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace {
                i += 1
                continue
            }
            let start = i
            if c.isLetter || c == "_" {
                tokens.append(try lexWord(chars, &i))
                continue
            }
            if c == "'" {
                tokens.append(try lexString(chars, &i))
                continue
            }
            if c.isASCIIDigit || (c == "-" && i + 1 < chars.count && chars[i + 1].isASCIIDigit) {
                if let token = try lexDateOrNumber(chars, &i) {
                    tokens.append(token)
                    continue
                }
            }
            let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
            if ["<=", ">=", "!=", "<>"].contains(two) {
                tokens.append(Token(kind: .symbol, text: two == "<>" ? "!=" : two, raw: two, position: start))
                i += 2
                continue
            }
            if "=<>(),".contains(c) {
                tokens.append(Token(kind: .symbol, text: String(c), raw: String(c), position: start))
                i += 1
                continue
            }
            throw SOQLError(position: start, token: String(c), message: "unexpected character")
        }
        tokens.append(Token(kind: .end, text: "", raw: "end of query", position: chars.count))
        return tokens
    }

    /// A keyword or an identifier (a field path) starting at `i`; `i` moves past it.
    static func lexWord(_ chars: [Character], _ i: inout Int) throws -> Token {
        let start = i
        while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "." {
            i += 1
        }
        let word = String(chars[start..<i])
        let upper = word.uppercased()
        if keywords.contains(upper) { return Token(kind: .keyword, text: upper, raw: word, position: start) }
        if word.hasSuffix(".") || word.contains("..") {
            throw SOQLError(position: start, token: word, message: "invalid field path")
        }
        return Token(kind: .identifier, text: word, raw: word, position: start)
    }

    /// A quoted string starting at `i` (at its quote), escapes resolved; `i` moves past it.
    static func lexString(_ chars: [Character], _ i: inout Int) throws -> Token {
        let start = i
        i += 1
        var value = ""
        var closed = false
        while i < chars.count {
            let d = chars[i]
            if d == "\\" {
                guard i + 1 < chars.count else { break }
                // The escape is the first scalar after the backslash: combining marks
                // that follow it join its Character ('r' and U+032E are one), and are
                // the string's own text.
                var scalars = chars[i + 1].unicodeScalars[...]
                let e = Character(scalars.removeFirst())
                switch e {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "'", "\"", "\\", "%", "_":
                    value.append(e == "%" || e == "_" ? "\\" + String(e) : String(e))
                default:
                    throw SOQLError(
                        position: i, token: "\\" + String(chars[i + 1]),
                        message: "invalid escape sequence")
                }
                value.unicodeScalars.append(contentsOf: scalars)
                i += 2
                continue
            }
            if d == "'" {
                closed = true
                i += 1
                break
            }
            value.append(d)
            i += 1
        }
        guard closed else {
            throw SOQLError(
                position: start, token: String(chars[start..<min(chars.count, start + 20)]),
                message: "unterminated string")
        }
        return Token(kind: .string, text: value, raw: String(chars[start..<i]), position: start)
    }

    /// A date (`2024-01-31`), a date-time (`2024-01-31T10:00:00.000+0000`) or a number.
    static func lexDateOrNumber(_ chars: [Character], _ i: inout Int) throws -> Token? {
        let start = i
        func digits(_ count: Int, at index: Int) -> Bool {
            guard index + count <= chars.count else { return false }
            return chars[index..<index + count].allSatisfy(\.isASCIIDigit)
        }
        if digits(4, at: i), i + 4 < chars.count, chars[i + 4] == "-", digits(2, at: i + 5),
            i + 7 < chars.count,
            chars[i + 7] == "-", digits(2, at: i + 8)
        {
            i += 10
            if i < chars.count, chars[i] == "T" {
                i += 1
                while i < chars.count, chars[i].isASCIIDigit || ":.+-Z".contains(chars[i]) {
                    i += 1
                }
                let text = String(chars[start..<i])
                guard DateTimeLiteral.milliseconds(text) != nil else {
                    throw SOQLError(position: start, token: text, message: "invalid date-time literal")
                }
                return Token(kind: .dateTime, text: text, raw: text, position: start)
            }
            let text = String(chars[start..<i])
            return Token(kind: .date, text: text, raw: text, position: start)
        }
        if chars[i] == "-" { i += 1 }
        let digitsStart = i
        while i < chars.count, chars[i].isASCIIDigit { i += 1 }
        // Every path here consumes a digit (the caller saw one): a lexer that does not move on
        // would loop for ever.
        guard i > digitsStart else {
            throw SOQLError(
                position: start, token: String(chars[start...min(i, chars.count - 1)]),
                message: "invalid number")
        }
        if i < chars.count, chars[i] == ".", i + 1 < chars.count, chars[i + 1].isASCIIDigit {
            i += 1
            while i < chars.count, chars[i].isASCIIDigit { i += 1 }
        }
        if i < chars.count, chars[i].isLetter {
            throw SOQLError(position: start, token: String(chars[start...i]), message: "invalid number")
        }
        let text = String(chars[start..<i])
        return Token(kind: .number, text: text, raw: text, position: start)
    }
}

extension Character {
    /// `0` to `9` only: `isNumber` is true for any Unicode number, and for a digit followed by a
    /// combining mark, which the lexer's number scan (ASCII) would not move past.
    var isASCIIDigit: Bool { asciiValue.map { (48...57).contains($0) } ?? false }
}
