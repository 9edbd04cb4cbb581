import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's parent-children sync up target (`SFParentChildrenSyncUpTarget`): each parent goes
/// with its children in one composite call (`POST composite`): the parent's create or update
/// first, then the children, linked to a created parent through `@{parent.id}`, and the parent's
/// delete last (alone under master-detail: the server deletes the children). Creates are
/// upserts on Baton's external id, so a call repeated after a lost answer finds what the first
/// created. More than 25 requests go in several calls, the parent's first.
public struct ParentChildrenSyncUpTarget: TreeSyncUpTarget {
    public let client: RESTClient
    public let parentInfo: ParentInfo
    public let childrenInfo: ChildrenInfo
    public let relationshipType: RelationshipType
    public let parentCreateFieldlist: [String]?
    public let parentUpdateFieldlist: [String]?
    public let childrenCreateFieldlist: [String]?
    public let childrenUpdateFieldlist: [String]?
    public let externalIdFieldName: String

    public init(
        client: RESTClient, parentInfo: ParentInfo, parentCreateFieldlist: [String]? = nil,
        parentUpdateFieldlist: [String]? = nil, childrenInfo: ChildrenInfo,
        childrenCreateFieldlist: [String]? = nil,
        childrenUpdateFieldlist: [String]? = nil, relationshipType: RelationshipType,
        externalIdFieldName: String = "BatonExternalId__c"
    ) throws {
        try TargetSupport.requireTree(parentInfo, childrenInfo)
        for list in [
            parentCreateFieldlist, parentUpdateFieldlist, childrenCreateFieldlist, childrenUpdateFieldlist,
        ] {
            if let list { try TargetSupport.requireFields(list) }
        }
        self.client = client
        self.parentInfo = parentInfo
        self.childrenInfo = childrenInfo
        self.relationshipType = relationshipType
        self.parentCreateFieldlist = parentCreateFieldlist
        self.parentUpdateFieldlist = parentUpdateFieldlist
        self.childrenCreateFieldlist = childrenCreateFieldlist
        self.childrenUpdateFieldlist = childrenUpdateFieldlist
        self.externalIdFieldName = externalIdFieldName
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "parentChildren", "parent": .object(parentInfo.json),
            "children": .object(childrenInfo.json),
            "relationshipType": .string(relationshipType.rawValue),
            "externalIdFieldName": .string(externalIdFieldName),
        ]
        for (key, list) in [
            ("parentCreateFieldlist", parentCreateFieldlist),
            ("parentUpdateFieldlist", parentUpdateFieldlist),
            ("childrenCreateFieldlist", childrenCreateFieldlist),
            ("childrenUpdateFieldlist", childrenUpdateFieldlist),
        ] {
            if let list { object[key] = .array(list.map(JSONValue.string)) }
        }
        return object
    }

    public var idFieldName: String { parentInfo.idFieldName }
    public var modificationDateFieldName: String { parentInfo.modificationDateFieldName }
    public var createFieldlist: [String]? { parentCreateFieldlist }
    public var updateFieldlist: [String]? { parentUpdateFieldlist }
    /// One tree at a time, so progress moves tree by tree as in Mobile Sync.
    public var batchSize: Int { 1 }
    public var childrenSoup: ChildrenSoup { childrenInfo.soup }
    public var deletesChildrenWithParent: Bool { relationshipType == .masterDetail }

    /// Parents alone (no children), each its own tree.
    public func send(_ changes: [LocalChange]) async throws -> [SyncUpOutcome] {
        var outcomes: [SyncUpOutcome] = []
        for change in changes {
            let tree = try await sendTree(
                TreeChange(parent: change, parentServerId: change.serverId, children: []))
            outcomes.append(tree.parent ?? .failed("not sent"))
        }
        return outcomes
    }

    /// One subrequest of a composite call.
    struct Subrequest {
        var request: JSONValue
    }

    public func sendTree(_ tree: TreeChange) async throws -> TreeOutcome {
        let answers = try await post(
            calls(for: tree), parentCreated: tree.parent?.kind == .create, parentServerId: tree.parentServerId
        )
        return TreeOutcome(
            parent: tree.parent.map { outcome(answers["parent"], $0.kind, isChild: false) },
            children: tree.children.enumerated().map {
                outcome(answers["child\($0.offset)"], $0.element.kind, isChild: true)
            })
    }

    /// The tree's subrequests in order: the parent's create or update first, then its children
    /// (linked to the parent: `@{parent.id}` for a parent created in the same call), the parent's
    /// delete last.
    func calls(for tree: TreeChange) -> [Subrequest] {
        let parentDeleted = tree.parent?.kind == .delete
        var head: [Subrequest] = []
        var tail: [Subrequest] = []
        if let parent = tree.parent {
            let sub = subrequest(parent, type: parentInfo.sobjectType, ref: "parent", parentLink: nil)
            if parentDeleted { tail.append(sub) } else { head.append(sub) }
        }
        let parentCreated = tree.parent?.kind == .create
        let link: String? = parentDeleted ? nil : parentCreated ? "@{parent.id}" : tree.parentServerId
        let children = tree.children.enumerated().map { index, change in
            subrequest(change, type: childrenInfo.sobjectType, ref: "child\(index)", parentLink: link)
        }
        return head + children + tail
    }

    /// One change as a composite subrequest: a create is an upsert on the external id.
    func subrequest(_ change: LocalChange, type: String, ref: String, parentLink: String?) -> Subrequest {
        let base = client.apiPath + "/sobjects/"
        var fields = change.fields
        let method: String
        let url: String
        switch change.kind {
        case .create:
            let external = fields.removeValue(forKey: externalIdFieldName)?.stringValue ?? ""
            method = "PATCH"
            url = base + "\(type)/\(externalIdFieldName)/\(external.addingPercentEncodingForPath)"
        case .update:
            method = "PATCH"
            url = base + "\(type)/\(change.serverId ?? "")"
        case .delete:
            method = "DELETE"
            url = base + "\(type)/\(change.serverId ?? "")"
        }
        if let parentLink, change.kind != .delete {
            fields[childrenInfo.parentIdFieldName] = .string(parentLink)
        }
        var object: JSONObject = [
            "method": .string(method), "url": .string(url), "referenceId": .string(ref),
        ]
        if change.kind != .delete { object["body"] = .object(fields) }
        return Subrequest(request: .object(object))
    }

    /// Sends the subrequests, as many composite calls as they need; returns each answer by its
    /// reference. A created parent's children must travel with it (the reference): the first
    /// call carries it and as many children as fit; later calls link them by the new id.
    func post(_ calls: [Subrequest], parentCreated: Bool, parentServerId: String?) async throws
        -> [String: JSONValue]
    {
        var answers: [String: JSONValue] = [:]
        var remaining = calls
        var parentId = parentServerId
        while !remaining.isEmpty {
            let chunk = Array(remaining.prefix(CompositeLimit.subrequests))
            remaining.removeFirst(chunk.count)
            let body: JSONValue = ["allOrNone": false, "compositeRequest": .array(chunk.map(\.request))]
            let reply = try await client.send(
                .POST, client.apiPath + "/composite", body: body, idempotent: false)
            for answer in reply.body.value(atPath: "compositeResponse")?.arrayValue ?? [] {
                if let ref = answer.value(atPath: "referenceId")?.stringValue { answers[ref] = answer }
            }
            if parentCreated, parentId == nil {
                parentId = answers["parent"]?.value(atPath: "body.id")?.stringValue
            }
            if let parentId { remaining = remaining.map { linked($0, to: parentId) } }
        }
        return answers
    }

    /// `sub` with a `@{parent.id}` link replaced by the parent's id.
    func linked(_ sub: Subrequest, to parentId: String) -> Subrequest {
        guard case .object(var object) = sub.request, var body = object["body"]?.objectValue,
            body[childrenInfo.parentIdFieldName] == "@{parent.id}"
        else { return sub }
        body[childrenInfo.parentIdFieldName] = .string(parentId)
        object["body"] = .object(body)
        return Subrequest(request: .object(object))
    }

    /// What a subrequest's answer says of its change: gone only on 404; a refusal naming a field
    /// keeps the record dirty (``RecordWriteError``).
    func outcome(_ answer: JSONValue?, _ kind: LocalChange.Kind, isChild: Bool) -> SyncUpOutcome {
        guard let answer else { return .failed("no answer for it in the composite response") }
        let status = answer.value(atPath: "httpStatusCode")?.intValue ?? 0
        if (200..<300).contains(status) {
            switch kind {
            case .create:
                return answer.value(atPath: "body.id")?.stringValue.map(SyncUpOutcome.created)
                    ?? .failed("no id returned")
            case .update: return .updated
            case .delete: return .deleted
            }
        }
        let error = answer.value(atPath: "body")?.arrayValue?.first
        return RecordWriteError(
            call: .singleRecord(status: Int(status)),
            errorCode: error?.value(atPath: "errorCode")?.stringValue,
            message: error?.value(atPath: "message")?.stringValue,
            fields: error?.value(atPath: "fields")?.arrayValue?.compactMap(\.stringValue) ?? []
        ).outcome(for: kind, parentLink: isChild ? childrenInfo.parentIdFieldName : nil)
    }

    /// `SELECT Id, LastModifiedDate, (SELECT Id, LastModifiedDate FROM Contacts) FROM Account
    /// WHERE Id = '…'`, with every child: the nested result's further pages are fetched too, since
    /// a child missing here would count as changed on the server and hold the tree back.
    public func fetchTreeTimeStamps(parentId: String) async throws -> [String: Int64] {
        let nested = SOQLQuery(
            fields: [.field(childrenInfo.idFieldName), .field(childrenInfo.modificationDateFieldName)],
            object: childrenInfo.sobjectTypePlural)
        let query = SOQLQuery(
            fields: [
                .field(parentInfo.idFieldName), .field(parentInfo.modificationDateFieldName),
                .subquery(nested),
            ], object: parentInfo.sobjectType,
            condition: .comparison(field: parentInfo.idFieldName, op: .equal, value: .string(parentId)))
        var stamps: [String: Int64] = [:]
        for record in try await client.queryFirstPage(query.soql).records {
            if let id = record[parentInfo.idFieldName]?.stringValue,
                let stamp = modificationTimeStamp(of: record)
            {
                stamps[id] = stamp
            }
            for child in try await client.allRecords(ofNested: record[childrenInfo.sobjectTypePlural]) {
                let child = JSONValue.object(child)
                if let id = child.value(atPath: childrenInfo.idFieldName)?.stringValue,
                    let stamp = child.value(atPath: childrenInfo.modificationDateFieldName)?.stringValue
                        .flatMap(DateTimeLiteral.milliseconds)
                {
                    stamps[id] = stamp
                }
            }
        }
        return stamps
    }

    public func fetchModificationTimeStamps(ids: [String]) async throws -> [String: Int64] {
        var stamps: [String: Int64] = [:]
        for id in ids {
            stamps.merge(try await fetchTreeTimeStamps(parentId: id).filter { $0.key == id }) { $1 }
        }
        return stamps
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[parentInfo.modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }

    public func childModificationTimeStamp(of record: JSONObject) -> Int64? {
        record[childrenInfo.modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }
}

/// Salesforce's limit on subrequests in one composite call.
enum CompositeLimit {
    static let subrequests = 25
}

extension String {
    /// The text as one URL path segment.
    var addingPercentEncodingForPath: String {
        addingPercentEncoding(withAllowedCharacters: .rfc3986Unreserved) ?? self
    }
}

extension ParentChildrenSyncUpTarget {
    /// Rebuilds the target from its ``json``.
    init(_ json: JSONObject, client: RESTClient) throws {
        try self.init(
            client: client, parentInfo: try ParentInfo(json: json),
            parentCreateFieldlist: try RESTTargetFactory.fieldlist(json, "parentCreateFieldlist"),
            parentUpdateFieldlist: try RESTTargetFactory.fieldlist(json, "parentUpdateFieldlist"),
            childrenInfo: try ChildrenInfo(json: json),
            childrenCreateFieldlist: try RESTTargetFactory.fieldlist(json, "childrenCreateFieldlist"),
            childrenUpdateFieldlist: try RESTTargetFactory.fieldlist(json, "childrenUpdateFieldlist"),
            relationshipType: RelationshipType(json: json),
            externalIdFieldName: json["externalIdFieldName"]?.stringValue ?? "BatonExternalId__c")
    }
}
