import BatonJSON
import GRDB
import SOQL

/// A SOSL search as the server runs it: the parsed ``SOSLQuery`` (`FIND {term} [IN … FIELDS]
/// [RETURNING Type[(fields [WHERE …] [ORDER BY …] [LIMIT n])], …] [LIMIT n]`), its term as
/// alternatives (`OR`) of tokens, `*` at a word's end for a prefix.
struct SOSLSearch: Sendable {
    typealias Scope = SOSLQuery.Scope

    /// One type to return and how: its select list, filter, order and limit as SOQL.
    struct Returning: Sendable {
        var query: SOQLQuery
    }

    /// Alternatives (`OR`), each a list of lower-case tokens that must all match; a token
    /// ending in `*` matches as a prefix.
    var alternatives: [[String]]
    var scope: Scope = .all
    /// Empty: every type, `Id` only. Each type at most once (``SOSLQuery``), so a search reads
    /// each type's records at most once.
    var returning: [Returning] = []
    var limit: Int?

    static let maxLimit = 2000
    /// Records read from the store at a time while matching.
    static let chunkSize = 200

    init(parsing text: String) throws {
        let parsed: SOSLQuery
        do {
            parsed = try SOSLQuery(parsing: text)
        } catch let error as SOQLError {
            throw Self.malformed(error.message)
        }
        alternatives = Self.alternatives(parsed.term)
        guard alternatives.contains(where: { $0.contains { $0.trimmingCharacters(in: ["*"]).count >= 2 } })
        else {
            throw SalesforceError(
                status: 400, "INVALID_SEARCH",
                "search term must be longer than one character: \(parsed.term.prefix(80))")
        }
        scope = parsed.scope
        returning = parsed.returning.map(Returning.init)
        limit = parsed.limit
    }

    static func malformed(_ message: String) -> SalesforceError {
        SalesforceError(status: 400, "MALFORMED_SEARCH", message)
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
}
