import BatonJSON
import GRDB

/// Shapes stored records as the query API answers them: `attributes` first, each selected field
/// under its canonical name, parent fields nested under the relationship name (with their own
/// `attributes`, or `null` for an empty lookup), child subqueries nested as
/// `{"totalSize", "done", "records"}` (or `null` when there are none), paged past
/// ``RelatedRecords/ChildPaging/size`` children as Salesforce pages them: `"done": false` and a
/// `nextRecordsUrl` for the rest.
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
            guard children.totalSize > 0 else {
                out[relationship] = .null
                return
            }
            var nested: JSONObject = [
                "totalSize": .int(Int64(children.totalSize)), "done": .bool(children.nextRecordsUrl == nil),
            ]
            if let next = children.nextRecordsUrl { nested["nextRecordsUrl"] = .string(next) }
            nested["records"] = .array(children.records)
            out[relationship] = .object(nested)
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
    /// How a parent's children page: the first `size` in the parent's nested result, the rest
    /// behind a query locator that `open` makes from the subquery and the row ids of every child
    /// it matches, in order, answering the locator's `nextRecordsUrl`.
    struct ChildPaging {
        var size: Int
        var open: (_ query: ResolvedQuery, _ rowIds: [Int64]) -> String
    }

    /// One parent's children as its nested query result holds them.
    struct Children {
        /// The first page's records, projected.
        var records: [JSONValue]
        /// How many children the subquery matches in all.
        var totalSize: Int
        /// Where the rest are, when the first page does not hold them all.
        var nextRecordsUrl: String?
    }

    let db: Database
    let projector: Projector
    /// `nil`: every child in the parent's nested result (a search's records).
    let childPaging: ChildPaging?
    private var parents: [String: JSONObject?] = [:]

    init(db: Database, projector: Projector, childPaging: ChildPaging? = nil) {
        self.db = db
        self.projector = projector
        self.childPaging = childPaging
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

    /// The children of `parentId` that `query` selects, in its order: the first page projected,
    /// and a locator for the rest when there are more than ``ChildPaging/size``.
    func children(of parentId: String, through lookup: FieldDescription, _ query: ResolvedQuery) throws
        -> Children
    {
        let (sql, arguments) = try QueryTranslator(
            schema: projector.schema, wholeSeconds: projector.wholeSeconds
        ).idQuery(
            for: query, childOf: (lookup, parentId))
        let ids = try Int64.fetchAll(db, sql: sql, arguments: arguments)
        var shown = ids[...]
        var next: String?
        if let childPaging, ids.count > childPaging.size {
            shown = ids.prefix(childPaging.size)
            next = childPaging.open(query, ids)
        }
        let rows = try QueryEngine.rows(db, type: query.object.name, rowIds: Array(shown))
        let records = try shown.compactMap { rows[$0] }.map { row -> JSONValue in
            .object(try projector.project(try RecordStorage.fullRecord(row), query, related: self))
        }
        return Children(records: records, totalSize: ids.count, nextRecordsUrl: next)
    }
}
