import Foundation

/// A SOSL search of the subset Mobile Sync and common clients send, parsed:
/// `FIND {term} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Type[(fields [WHERE …] [ORDER BY …]
/// [LIMIT n] [OFFSET n])], …] [LIMIT n]`. Keywords in any case; the term in braces (or single
/// quotes), with `\` escapes. Parsing takes time linear in the text; each type may be named
/// once in RETURNING, as Salesforce requires ("each object must be distinct").
///
/// The reference server runs it; a SOSL sync down target parses it so that a search that
/// cannot run is refused when the sync is declared.
public struct SOSLQuery: Sendable {
    public enum Scope: String, Sendable {
        case all = "ALL"
        case name = "NAME"
        case email = "EMAIL"
        case phone = "PHONE"
    }

    /// The term between the braces, escapes kept.
    public var term: String
    public var scope: Scope = .all
    /// Each type to return with its select list, filter, order and limit, as SOQL; empty:
    /// every type, `Id` only.
    public var returning: [SOQLQuery] = []
    public var limit: Int?

    /// Parses a search.
    ///
    /// - Throws: ``SOQLError`` naming the position for text outside the subset, longer than
    ///   ``SOQLQuery/maxLength`` (SOSL has SOQL's limits), or naming a type twice in RETURNING.
    public init(parsing text: String) throws {
        guard text.count <= SOQLQuery.maxLength else {
            throw SOQLError(
                position: SOQLQuery.maxLength, token: "…",
                message: "search longer than \(SOQLQuery.maxLength) characters")
        }
        var scanner = SOSLScanner(text)
        guard scanner.keyword("FIND") else {
            throw scanner.error("expected FIND at the start of the search")
        }
        term = try scanner.term()
        if scanner.keyword("IN") {
            guard let word = scanner.word(), let scope = Scope(rawValue: word.uppercased()) else {
                throw scanner.error("expected ALL, NAME, EMAIL or PHONE after IN")
            }
            self.scope = scope
            guard scanner.keyword("FIELDS") else {
                throw scanner.error("expected FIELDS after IN \(scope.rawValue)")
            }
        }
        if scanner.keyword("RETURNING") {
            var named = Set<String>()
            repeat {
                guard let object = scanner.word() else {
                    throw scanner.error("expected an object name after RETURNING")
                }
                guard named.insert(object.lowercased()).inserted else {
                    throw SOQLError(
                        position: scanner.index - object.count, token: String(object.prefix(80)),
                        message:
                            "\(object.prefix(80)) is named twice in RETURNING; each object must be distinct")
                }
                var spec = "Id"
                if scanner.peek("(") { spec = try scanner.parenthesised() }
                returning.append(try Self.soql(object: object, spec: spec, at: scanner.index))
            } while scanner.symbol(",")
        }
        if scanner.keyword("LIMIT") {
            guard let word = scanner.word(), let value = Int(word), value >= 0 else {
                throw scanner.error("expected a number after LIMIT")
            }
            limit = value
        }
        guard scanner.atEnd else {
            throw scanner.error("unexpected text after the search: \(scanner.rest.prefix(40))")
        }
    }

    /// `Id, Name WHERE Name != null ORDER BY Name LIMIT 5` of `Account`, as SOQL.
    static func soql(object: String, spec: String, at position: Int) throws -> SOQLQuery {
        var fields = spec
        var clause = ""
        if let range = spec.range(
            of: #"\b(WHERE|ORDER\s+BY|LIMIT|OFFSET)\b"#, options: [.regularExpression, .caseInsensitive])
        {
            fields = String(spec[..<range.lowerBound])
            clause = String(spec[range.lowerBound...])
        }
        do {
            return try SOQLQuery(parsing: "SELECT \(fields) FROM \(object) \(clause)")
        } catch let error as SOQLError {
            throw SOQLError(
                position: position, token: String(object.prefix(80)),
                message: "in RETURNING \(object.prefix(80)): \(error.message)")
        }
    }
}

/// Reads a search's text, one character at a time: linear in the text.
struct SOSLScanner {
    let characters: [Character]
    var index = 0

    init(_ text: String) {
        characters = Array(text)
    }

    func error(_ message: String) -> SOQLError {
        SOQLError(
            position: index, token: index < characters.count ? String(characters[index]) : "end of search",
            message: message)
    }

    var atEnd: Bool {
        var probe = self
        probe.skipSpace()
        return probe.index >= probe.characters.count
    }

    var rest: String { String(characters[min(index, characters.count)...]) }

    mutating func skipSpace() {
        while index < characters.count, characters[index].isWhitespace { index += 1 }
    }

    mutating func peek(_ symbol: Character) -> Bool {
        skipSpace()
        return index < characters.count && characters[index] == symbol
    }

    mutating func symbol(_ symbol: Character) -> Bool {
        guard peek(symbol) else { return false }
        index += 1
        return true
    }

    /// A run of letters, digits and `_` (a keyword, a name, a number).
    mutating func word() -> String? {
        skipSpace()
        let start = index
        while index < characters.count,
            characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
        {
            index += 1
        }
        return index > start ? String(characters[start..<index]) : nil
    }

    /// Consumes `keyword` (any case) if it comes next.
    mutating func keyword(_ keyword: String) -> Bool {
        let saved = index
        if let word = word(), word.uppercased() == keyword { return true }
        index = saved
        return false
    }

    /// `{term}` or `'term'`, escapes kept.
    mutating func term() throws -> String {
        skipSpace()
        guard index < characters.count, characters[index] == "{" || characters[index] == "'" else {
            throw error("No search term found. The search term must be enclosed in braces.")
        }
        let close: Character = characters[index] == "{" ? "}" : "'"
        index += 1
        var term = ""
        while index < characters.count, characters[index] != close {
            if characters[index] == "\\", index + 1 < characters.count {
                term.append(characters[index])
                index += 1
            }
            term.append(characters[index])
            index += 1
        }
        guard index < characters.count else { throw error("the search term is not closed") }
        index += 1
        return term
    }

    /// The text between `(` and its `)` (quotes respected).
    mutating func parenthesised() throws -> String {
        _ = symbol("(")
        var depth = 1
        var quoted = false
        var out = ""
        while index < characters.count {
            let character = characters[index]
            index += 1
            if quoted {
                if character == "\\", index < characters.count {
                    out.append(character)
                    out.append(characters[index])
                    index += 1
                    continue
                }
                if character == "'" { quoted = false }
            } else if character == "'" {
                quoted = true
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth -= 1
                if depth == 0 { return out }
            }
            out.append(character)
        }
        throw error("a RETURNING field list is not closed")
    }
}
