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
    ///
    /// Each type's ordered ids are read in one read, then its records ``chunkSize`` at a time,
    /// each chunk a read of its own: a search that reads many records lets other requests in
    /// between chunks instead of holding the store for all of them. A record deleted meanwhile
    /// is skipped; one changed meanwhile is matched as it is when its chunk is read.
    func run(storage: RecordStorage, apiPath: String) throws -> (body: JSONValue, served: [String: Int]) {
        let schema = storage.schema
        let projector = Projector(
            schema: schema, apiPath: apiPath, wholeSeconds: storage.clock == .salesforce)
        var specs = returning
        if specs.isEmpty {
            specs = schema.objectNames.map { Returning(query: SOQLQuery(fields: [.field("Id")], object: $0)) }
        }
        // Every type resolved before any is read: a bad one costs no reading.
        let plans = try specs.map { try Plan($0.query, schema: schema) }
        let translator = QueryTranslator(schema: schema, wholeSeconds: storage.clock == .salesforce)
        var remaining = min(limit ?? Self.maxLimit, Self.maxLimit)
        var found: [JSONValue] = []
        var served: [String: Int] = [:]
        for var plan in plans where remaining > 0 {
            let (sql, arguments) = try translator.idQuery(for: plan.resolved)
            // The ordered row ids first: a join with the records would not keep their order.
            let ids = try storage.read { db in try Int64.fetchAll(db, sql: sql, arguments: arguments) }
            var start = 0
            while remaining > 0, plan.taken < plan.limit, start < ids.count {
                let chunk = Array(ids[start..<min(ids.count, start + Self.chunkSize)])
                start += chunk.count
                let records = try storage.read { db in
                    try matching(chunk, &plan, remaining: remaining, db: db, projector: projector)
                }
                remaining -= records.count
                served[plan.resolved.object.name, default: 0] += records.count
                found += records
            }
        }
        return (["searchRecords": .array(found)], served)
    }

    /// One RETURNING type as the search reads it. Its LIMIT and OFFSET count the records the
    /// term matches, so they are applied after matching; WHERE and ORDER BY run in SQLite.
    struct Plan {
        var resolved: ResolvedQuery
        var limit: Int
        var skip: Int
        var taken = 0

        init(_ query: SOQLQuery, schema: ServerSchema) throws {
            var query = query
            limit = query.limit ?? .max
            skip = query.offset ?? 0
            query.limit = nil
            query.offset = nil
            resolved = try schema.resolve(query)
            guard !resolved.isCount, !resolved.isAggregate else {
                throw SOSLSearch.malformed("RETURNING selects fields, not COUNT() or aggregates")
            }
        }
    }

    /// The records of `chunk` (row ids) that the term matches, projected, past the plan's
    /// offset and within its limit and `remaining`.
    func matching(
        _ chunk: [Int64], _ plan: inout Plan, remaining: Int, db: Database, projector: Projector
    ) throws -> [JSONValue] {
        let related = RelatedRecords(db: db, projector: projector)
        let rows = try QueryEngine.rows(db, type: plan.resolved.object.name, rowIds: chunk)
        var found: [JSONValue] = []
        for id in chunk {
            guard found.count < remaining, plan.taken < plan.limit else { break }
            guard let row = rows[id] else { continue }
            let record = try RecordStorage.fullRecord(row)
            guard matches(record, of: plan.resolved.object) else { continue }
            guard plan.skip == 0 else {
                plan.skip -= 1
                continue
            }
            found.append(.object(try projector.project(record, plan.resolved, related: related)))
            plan.taken += 1
        }
        return found
    }
}
