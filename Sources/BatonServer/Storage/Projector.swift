import BatonJSON
import GRDB

/// Shapes stored records as the query API answers them: `attributes` first, each selected field
/// under its canonical name, parent fields nested under the relationship name (with their own
/// `attributes`, or `null` for an empty lookup), child subqueries nested as
/// `{"totalSize", "done", "records"}` (or `null` when there are none).
struct Projector: Sendable {
    let schema: ServerSchema
    let apiPath: String
    /// Time-stamp comparisons in child subqueries ignore milliseconds (Salesforce's clock).
    var wholeSeconds = false

    func attributes(type: String, id: String) -> JSONValue {
        ["type": .string(type), "url": .string("\(apiPath)/sobjects/\(type)/\(id)")]
    }

    /// `record` as `query` selects it; `related` reads parents and children (nil when the query
    /// selects neither).
    func project(_ record: JSONObject, _ query: ResolvedQuery, related: RelatedRecords?) throws -> JSONObject
    {
        var out: JSONObject = [
            "attributes": attributes(type: query.object.name, id: record["Id"]?.stringValue ?? "")
        ]
        for item in query.items { try add(item, of: record, to: &out, related: related) }
        return out
    }

    private func add(
        _ item: ResolvedItem, of record: JSONObject, to out: inout JSONObject, related: RelatedRecords?
    )
        throws
    {
        switch item {
        case .field(let field):
            out[field.name] = Self.value(field.name, in: record) ?? .null
        case .parent(let lookup, let parentType, let inner):
            let key = lookup.relationshipName ?? lookup.name
            guard let id = Self.value(lookup.name, in: record)?.stringValue,
                let parent = try related?.record(id: id, type: parentType.name)
            else {
                out[key] = .null
                return
            }
            var nested = out[key]?.objectValue ?? ["attributes": attributes(type: parentType.name, id: id)]
            try add(inner, of: parent, to: &nested, related: related)
            out[key] = .object(nested)
        case .children(let relationship, let lookup, let query):
            guard let id = record["Id"]?.stringValue, let related else {
                out[relationship] = .null
                return
            }
            let children = try related.children(of: id, through: lookup, query)
            out[relationship] =
                children.isEmpty
                ? .null
                : ["totalSize": .int(Int64(children.count)), "done": true, "records": .array(children)]
        }
    }

    /// A stored field by its canonical name, or in another case (records written before the
    /// schema canonicalised names).
    static func value(_ name: String, in record: JSONObject) -> JSONValue? {
        if let value = record[name] { return value }
        let lowered = name.lowercased()
        return record.first { $0.key.lowercased() == lowered }?.value
    }
}

/// Reads the parents and children a page's records refer to, inside one read; each parent is read
/// once per page.
final class RelatedRecords {
    let db: Database
    let projector: Projector
    private var parents: [String: JSONObject?] = [:]

    init(db: Database, projector: Projector) {
        self.db = db
        self.projector = projector
    }

    /// The record `id` of `type`, or nil (a dangling or foreign id reads as no parent).
    func record(id: String, type: String) throws -> JSONObject? {
        if let cached = parents[id] { return cached }
        let record = try Row.fetchOne(
            db, sql: "SELECT * FROM records WHERE id = ? AND type = ?", arguments: [id, type]
        ).map(RecordStorage.fullRecord)
        parents[id] = record
        return record
    }

    /// The children of `parentId` that `query` selects, projected.
    func children(of parentId: String, through lookup: FieldDescription, _ query: ResolvedQuery) throws
        -> [JSONValue]
    {
        let (sql, arguments) = try QueryTranslator(
            schema: projector.schema, wholeSeconds: projector.wholeSeconds
        ).idQuery(
            for: query, childOf: (lookup, parentId))
        let ids = try Int64.fetchAll(db, sql: sql, arguments: arguments)
        let rows = try QueryEngine.rows(db, type: query.object.name, rowIds: ids)
        return try ids.compactMap { rows[$0] }.map { row in
            .object(try projector.project(try RecordStorage.fullRecord(row), query, related: self))
        }
    }
}
