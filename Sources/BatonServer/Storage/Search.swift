import BatonJSON
import GRDB
import SOQL

/// A parsed SOSL search of the subset Mobile Sync and common clients send:
/// `FIND {term} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Type[(fields [WHERE …] [ORDER BY …]
/// [LIMIT n])], …] [LIMIT n]`. Keywords in any case; the term in braces (or single quotes),
/// with `\` escapes, `OR` between alternatives, `*` at a word's end for a prefix.
struct SOSLSearch: Sendable {
    enum Scope: String, Sendable {
        case all = "ALL"
        case name = "NAME"
        case email = "EMAIL"
        case phone = "PHONE"
    }

    /// One type to return and how: its select list, filter, order and limit as SOQL.
    struct Returning: Sendable {
        var query: SOQLQuery
    }

    /// Alternatives (`OR`), each a list of lower-case tokens that must all match; a token
    /// ending in `*` matches as a prefix.
    var alternatives: [[String]]
    var scope: Scope = .all
    /// Empty: every type, `Id` only.
    var returning: [Returning] = []
    var limit: Int?

    static let maxLimit = 2000
    /// Records read from the store at a time while matching.
    static let chunkSize = 200

    init(parsing text: String) throws {
        // SOSL has SOQL's limits (Salesforce's "SOSL Limits").
        guard text.count <= SOQLQuery.maxLength else {
            throw Self.malformed("search longer than \(SOQLQuery.maxLength) characters")
        }
        var scanner = Scanner(text)
        guard scanner.keyword("FIND") else {
            throw Self.malformed("expected FIND at the start of the search")
        }
        let term = try scanner.term()
        alternatives = Self.alternatives(term)
        guard alternatives.contains(where: { $0.contains { $0.trimmingCharacters(in: ["*"]).count >= 2 } })
        else {
            throw SalesforceError(
                status: 400, "INVALID_SEARCH",
                "search term must be longer than one character: \(term.prefix(80))")
        }
        if scanner.keyword("IN") {
            guard let word = scanner.word(), let scope = Scope(rawValue: word.uppercased()) else {
                throw Self.malformed("expected ALL, NAME, EMAIL or PHONE after IN")
            }
            self.scope = scope
            guard scanner.keyword("FIELDS") else {
                throw Self.malformed("expected FIELDS after IN \(scope.rawValue)")
            }
        }
        if scanner.keyword("RETURNING") {
            repeat {
                guard let object = scanner.word() else {
                    throw Self.malformed("expected an object name after RETURNING")
                }
                var spec = "Id"
                if scanner.peek("(") { spec = try scanner.parenthesised() }
                returning.append(Returning(query: try Self.soql(object: object, spec: spec)))
            } while scanner.symbol(",")
        }
        if scanner.keyword("LIMIT") {
            guard let word = scanner.word(), let value = Int(word), value >= 0 else {
                throw Self.malformed("expected a number after LIMIT")
            }
            limit = value
        }
        guard scanner.atEnd else {
            throw Self.malformed("unexpected text after the search: \(scanner.rest.prefix(40))")
        }
    }

    static func malformed(_ message: String) -> SalesforceError {
        SalesforceError(status: 400, "MALFORMED_SEARCH", message)
    }

    /// `Id, Name WHERE Name != null ORDER BY Name LIMIT 5` of `Account`, as SOQL.
    static func soql(object: String, spec: String) throws -> SOQLQuery {
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
            throw malformed("in RETURNING \(object.prefix(80)): \(error.message)")
        }
    }

    /// The term's `OR` alternatives, each as its tokens.
    static func alternatives(_ term: String) -> [[String]] {
        var unescaped = ""
        var escaping = false
        for character in term {
            if escaping || character != "\\" {
                unescaped.append(character)
                escaping = false
            } else {
                escaping = true
            }
        }
        return unescaped.components(separatedBy: " OR ").map { alternative in
            alternative.split(whereSeparator: \.isWhitespace).filter { $0 != "AND" }.flatMap {
                word -> [String] in
                let prefix = word.hasSuffix("*")
                var tokens = tokenize(String(word))
                if prefix, let last = tokens.popLast() { tokens.append(last + "*") }
                return tokens
            }
        }.filter { !$0.isEmpty }
    }

    /// Lower-case runs of letters and digits.
    static func tokenize(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init)
    }

    /// Whether `record` of `object` matches, in the fields the scope searches.
    func matches(_ record: JSONObject, of object: ObjectDescription) -> Bool {
        let searched = object.fields.filter { field in
            switch scope {
            case .name: field.name == "Name" || field.name == "FirstName" || field.name == "LastName"
            case .email: field.type == .email
            case .phone: field.type == .phone
            case .all: [.string, .textarea, .picklist, .email, .phone, .url].contains(field.type)
            }
        }
        var tokens = Set<String>()
        for field in searched {
            if let text = Projector.value(field.name, in: record)?.stringValue {
                tokens.formUnion(Self.tokenize(text))
            }
        }
        return alternatives.contains { words in
            words.allSatisfy { word in
                word.hasSuffix("*")
                    ? tokens.contains { $0.hasPrefix(word.dropLast()) } : tokens.contains(word)
            }
        }
    }

    /// Runs the search: `{"searchRecords": [...]}`, each record projected as its RETURNING
    /// asks, at most ``limit`` (2,000) in all.
    func run(storage: RecordStorage, apiPath: String) throws -> (body: JSONValue, served: [String: Int]) {
        let schema = storage.schema
        let projector = Projector(
            schema: schema, apiPath: apiPath, wholeSeconds: storage.clock == .salesforce)
        var specs = returning
        if specs.isEmpty {
            specs = schema.objectNames.map { Returning(query: SOQLQuery(fields: [.field("Id")], object: $0)) }
        }
        var remaining = min(limit ?? Self.maxLimit, Self.maxLimit)
        var found: [JSONValue] = []
        var served: [String: Int] = [:]
        try storage.read { db in
            let related = RelatedRecords(db: db, projector: projector)
            for spec in specs where remaining > 0 {
                // The type's LIMIT and OFFSET count the records the term matches, so they are
                // applied here, after matching; WHERE and ORDER BY run in SQLite.
                var query = spec.query
                let typeLimit = query.limit ?? .max
                var skip = query.offset ?? 0
                query.limit = nil
                query.offset = nil
                let resolved = try schema.resolve(query)
                guard !resolved.isCount, !resolved.isAggregate else {
                    throw Self.malformed("RETURNING selects fields, not COUNT() or aggregates")
                }
                let (sql, arguments) = try QueryTranslator(
                    schema: schema, wholeSeconds: storage.clock == .salesforce
                ).idQuery(for: resolved)
                // The ordered row ids first: a join with the records would not keep their order.
                let ids = try Int64.fetchAll(db, sql: sql, arguments: arguments)
                var taken = 0
                var start = 0
                while remaining > 0, taken < typeLimit, start < ids.count {
                    let chunk = Array(ids[start..<min(ids.count, start + Self.chunkSize)])
                    start += chunk.count
                    let rows = try QueryEngine.rows(db, type: resolved.object.name, rowIds: chunk)
                    for id in chunk {
                        guard remaining > 0, taken < typeLimit else { break }
                        guard let row = rows[id] else { continue }
                        let record = try RecordStorage.fullRecord(row)
                        guard matches(record, of: resolved.object) else { continue }
                        guard skip == 0 else {
                            skip -= 1
                            continue
                        }
                        found.append(.object(try projector.project(record, resolved, related: related)))
                        served[resolved.object.name, default: 0] += 1
                        taken += 1
                        remaining -= 1
                    }
                }
            }
        }
        return (["searchRecords": .array(found)], served)
    }

    /// Reads the search's text.
    struct Scanner {
        let characters: [Character]
        var index = 0

        init(_ text: String) {
            characters = Array(text)
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
                characters[index].isLetter || characters[index].isNumber
                    || characters[index] == "_"
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

        /// `{term}` or `'term'`, escapes kept for ``SOSLSearch/alternatives(_:)``.
        mutating func term() throws -> String {
            skipSpace()
            guard index < characters.count, characters[index] == "{" || characters[index] == "'" else {
                throw SOSLSearch.malformed(
                    "No search term found. The search term must be enclosed in braces.")
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
            guard index < characters.count else {
                throw SOSLSearch.malformed("the search term is not closed")
            }
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
            throw SOSLSearch.malformed("a RETURNING field list is not closed")
        }
    }
}
