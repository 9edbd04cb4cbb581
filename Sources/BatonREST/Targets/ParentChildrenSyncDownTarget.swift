import BatonStore
import BatonSync
import SOQL

/// A parent type in a parent-children sync (Mobile Sync's `SFParentInfo`).
public struct ParentInfo: Sendable, Hashable {
    public var sobjectType: String
    public var soupName: String
    public var idFieldName: String
    public var modificationDateFieldName: String

    public init(
        sobjectType: String, soupName: String, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate"
    ) {
        self.sobjectType = sobjectType
        self.soupName = soupName
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    var json: JSONObject {
        [
            "sobjectType": .string(sobjectType), "soupName": .string(soupName),
            "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
    }
}

/// The children type (Mobile Sync's `SFChildrenInfo`): also its relationship name
/// (`sobjectTypePlural`, `Contacts`) and the field holding the parent's id (`AccountId`).
public struct ChildrenInfo: Sendable, Hashable {
    public var sobjectType: String
    public var sobjectTypePlural: String
    public var soupName: String
    public var parentIdFieldName: String
    public var idFieldName: String
    public var modificationDateFieldName: String

    public init(
        sobjectType: String, sobjectTypePlural: String, soupName: String, parentIdFieldName: String,
        idFieldName: String = "Id", modificationDateFieldName: String = "LastModifiedDate"
    ) {
        self.sobjectType = sobjectType
        self.sobjectTypePlural = sobjectTypePlural
        self.soupName = soupName
        self.parentIdFieldName = parentIdFieldName
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    var json: JSONObject {
        [
            "sobjectType": .string(sobjectType), "sobjectTypePlural": .string(sobjectTypePlural),
            "soupName": .string(soupName), "parentIdFieldName": .string(parentIdFieldName),
            "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
    }

    var soup: ChildrenSoup {
        ChildrenSoup(
            soupName: soupName, idFieldName: idFieldName, parentIdFieldName: parentIdFieldName,
            relationshipKey: sobjectTypePlural, modificationDateFieldName: modificationDateFieldName)
    }
}

/// Master-detail children are deleted with their parent; lookup children are not.
public enum RelationshipType: String, Sendable, Hashable {
    case masterDetail = "MASTER_DETAIL"
    case lookup = "LOOKUP"
}

/// Mobile Sync's parent-children sync down target (`SFParentChildrenSyncDownTarget`): parents
/// with their children in one query (a child subquery), parents saved in the sync's soup and
/// children in theirs with the parent's id. Ordered by the parent's id, so a stopped run resumes
/// after the last parent it saved (``resumesAfterId``); a run after the first fetches the parents
/// modified since the previous run (``SyncDownPosition``), with their children modified since. As
/// in Mobile Sync, the query follows the parents: a child changed while its parent was not is
/// not fetched by a later run of the sync.
public struct ParentChildrenSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let parentInfo: ParentInfo
    public let childrenInfo: ChildrenInfo
    public let relationshipType: RelationshipType
    public let parentFieldlist: [String]
    /// A SOQL condition on the parents (`Industry = 'Energy'`), or nil.
    public let parentSoqlFilter: String?
    public let childrenFieldlist: [String]
    /// Parents per page (1–2000); `nil` lets the server choose. Not in Mobile Sync's JSON.
    public let batchSize: Int?
    /// How long after its stamp a server transaction may still commit (``SyncDownTarget/overlap``).
    public let overlap: Duration

    /// - Throws: `SyncError.invalidTarget` for a bad name, or a query the filter makes invalid.
    public init(
        client: RESTClient, parentInfo: ParentInfo, parentFieldlist: [String],
        parentSoqlFilter: String? = nil,
        childrenInfo: ChildrenInfo, childrenFieldlist: [String], relationshipType: RelationshipType,
        batchSize: Int? = nil, overlap: Duration = SyncDownPosition.defaultOverlap
    ) throws {
        if let batchSize, !(1...2000).contains(batchSize) {
            throw SyncError(.invalidTarget, "batch size must be between 1 and 2000, not \(batchSize)")
        }
        try TargetSupport.requireOverlap(overlap)
        self.batchSize = batchSize
        self.overlap = overlap
        try TargetSupport.requireTree(parentInfo, childrenInfo)
        try TargetSupport.requireFields(parentFieldlist)
        try TargetSupport.requireFields(childrenFieldlist)
        self.client = client
        self.parentInfo = parentInfo
        self.childrenInfo = childrenInfo
        self.relationshipType = relationshipType
        self.parentFieldlist = parentFieldlist
        self.parentSoqlFilter = parentSoqlFilter.flatMap { $0.isEmpty ? nil : $0 }
        self.childrenFieldlist = childrenFieldlist
        do {
            _ = try SOQLQuery(parsing: query(FetchStart(modifiedSince: 1, afterId: "0")))
        } catch let error as SOQLError {
            throw SyncError(.invalidTarget, "the parent-children query is not valid SOQL: \(error)")
        }
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "parentChildren", "parent": .object(parentInfo.json),
            "children": .object(childrenInfo.json),
            "relationshipType": .string(relationshipType.rawValue),
            "parentFieldlist": .array(parentFieldlist.map(JSONValue.string)),
            "childrenFieldlist": .array(childrenFieldlist.map(JSONValue.string)),
            "idFieldName": .string(parentInfo.idFieldName),
            "modificationDateFieldName": .string(parentInfo.modificationDateFieldName),
        ]
        if let parentSoqlFilter { object["parentSoqlFilter"] = .string(parentSoqlFilter) }
        if let batchSize { object["batchSize"] = .int(Int64(batchSize)) }
        TargetSupport.addOverlap(overlap, to: &object)
        return object
    }

    public var idFieldName: String { parentInfo.idFieldName }
    public var modificationDateFieldName: String { parentInfo.modificationDateFieldName }
    public var childrenSoup: ChildrenSoup? { childrenInfo.soup }
    public var resumesAfterId: Bool { true }

    /// Mobile Sync's query (its `getQueryToRun`, with Baton's lower bound and order): parents
    /// modified since `start.modifiedSince` (`>=`), with their children modified since, after
    /// `start.afterId` when resuming, ordered by the parent's id. The app's filter is wrapped in
    /// parentheses when joined to those conditions.
    ///
    /// `select Id, Name, LastModifiedDate, (select LastName, Id, LastModifiedDate from Contacts
    /// where LastModifiedDate >= …) from Account where LastModifiedDate >= … and Id > '…' and
    /// (FILTER) order by Id`
    public func query(_ start: FetchStart) -> String {
        var childrenWhere = ""
        var parentWhere: [String] = []
        if let since = start.modifiedSince {
            let stamp = DateTimeLiteral.format(milliseconds: since)
            childrenWhere = "\(childrenInfo.modificationDateFieldName) >= \(stamp)"
            parentWhere.append("\(parentInfo.modificationDateFieldName) >= \(stamp)")
        }
        if let afterId = start.afterId {
            parentWhere.append("\(parentInfo.idFieldName) > \(Literal.string(afterId).soql)")
        }
        if let parentSoqlFilter {
            parentWhere.append(parentWhere.isEmpty ? parentSoqlFilter : "(\(parentSoqlFilter))")
        }
        let nested = Self.select(
            Self.adding(
                [childrenInfo.idFieldName, childrenInfo.modificationDateFieldName], to: childrenFieldlist),
            from: childrenInfo.sobjectTypePlural, where: childrenWhere)
        let fields =
            Self.adding([parentInfo.idFieldName, parentInfo.modificationDateFieldName], to: parentFieldlist)
            + ["(\(nested))"]
        return Self.select(
            fields, from: parentInfo.sobjectType, where: parentWhere.joined(separator: " and "))
            + " order by \(parentInfo.idFieldName)"
    }

    /// `select Id from Account where FILTER`: the remote ids for clean resync ghosts, with the
    /// children's (`select Id, (select Id from Contacts) from Account …`).
    public var remoteIdsQuery: String {
        Self.select(
            [
                parentInfo.idFieldName,
                "(select \(childrenInfo.idFieldName) from \(childrenInfo.sobjectTypePlural))",
            ],
            from: parentInfo.sobjectType, where: parentSoqlFilter ?? "")
    }

    static func adding(_ required: [String], to fields: [String]) -> [String] {
        fields + required.filter { !fields.contains($0) }
    }

    /// Mobile Sync's SOQL builder: lower-case keywords, `", "` between fields.
    static func select(_ fields: [String], from object: String, where condition: String) -> String {
        "select \(fields.joined(separator: ", ")) from \(object)"
            + (condition.isEmpty ? "" : " where \(condition)")
    }

    /// Reads the server's clock (see ``SoqlSyncDownTarget``), then starts the query.
    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let serverTime = try await TargetSupport.serverTime(
            of: parentInfo.sobjectType, field: parentInfo.modificationDateFieldName,
            condition: parentSoqlFilter, client: client)
        let page = try await client.queryFirstPage(
            query(start), batchSize: min(batchSize ?? 2000, SoqlSyncDownTarget.firstPageSize))
        return SyncDownPage(
            records: try await flattened(page.records), totalSize: page.totalSize,
            next: page.done ? nil : page.nextRecordsUrl, serverTime: serverTime)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next else { return nil }
        let fetched = try await client.queryNextPage(next, batchSize: batchSize ?? 2000)
        return SyncDownPage(
            records: try await flattened(fetched.records), totalSize: page.totalSize,
            next: fetched.done ? nil : fetched.nextRecordsUrl)
    }

    /// Parents with all their children, each as ``flattened(_:)`` makes it, in order.
    func flattened(_ records: [JSONObject]) async throws -> [JSONObject] {
        var parents: [JSONObject] = []
        parents.reserveCapacity(records.count)
        for record in records { parents.append(try await flattened(record)) }
        return parents
    }

    /// A parent with all its children as a plain list, without their `attributes`. The query
    /// nests them as a query result (null when there are none) that holds the first of them
    /// when there are many, with a `nextRecordsUrl` for the rest: those pages are fetched here,
    /// before the parent's page is used, so a parent never comes with only some of its
    /// children. Mobile Sync reads only the first page.
    func flattened(_ record: JSONObject) async throws -> JSONObject {
        var copy = record
        copy[childrenInfo.sobjectTypePlural] = .array(
            try await client.allRecords(ofNested: record[childrenInfo.sobjectTypePlural]).map(
                JSONValue.object))
        return copy
    }

    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        try await remoteIds(try await client.queryFirstPage(remoteIdsQuery))
    }

    /// The parents' and the children's deletions (two requests); nil when either's ids are not
    /// Salesforce ids.
    public func deletedSince(_ since: Int64, until: Int64) async throws -> DeletedSince? {
        guard parentInfo.idFieldName == "Id", childrenInfo.idFieldName == "Id" else { return nil }
        return try await TargetSupport.deletedSince(
            since, until: until, types: [parentInfo.sobjectType, childrenInfo.sobjectType], client: client)
    }

    public func ghostCleaningServerTime() async throws -> Int64? {
        try await TargetSupport.serverTime(
            of: parentInfo.sobjectType, field: parentInfo.modificationDateFieldName, condition: nil,
            client: client)
    }

    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? {
        guard let next = page.next else { return nil }
        return try await remoteIds(try await client.queryNextPage(next))
    }

    /// The page's parent ids, and the ids of all their children (every nested page of them).
    func remoteIds(_ page: QueryPage) async throws -> RemoteIdPage {
        let parents = try await flattened(page.records)
        return RemoteIdPage(
            ids: parents.compactMap { $0[parentInfo.idFieldName]?.stringValue },
            childIds: parents.flatMap { parent in
                (parent[childrenInfo.sobjectTypePlural]?.arrayValue ?? []).compactMap {
                    $0.value(atPath: childrenInfo.idFieldName)?.stringValue
                }
            }, next: page.done ? nil : page.nextRecordsUrl)
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[parentInfo.modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }

    /// The parent's stamp and its children's.
    public func timeStamps(of record: JSONObject) -> [Int64] {
        (modificationTimeStamp(of: record).map { [$0] } ?? [])
            + (record[childrenInfo.sobjectTypePlural]?.arrayValue ?? []).compactMap {
                $0.value(atPath: childrenInfo.modificationDateFieldName)?.stringValue.flatMap(
                    DateTimeLiteral.milliseconds)
            }
    }
}

extension ParentChildrenSyncDownTarget {
    /// Rebuilds the target from its ``json`` (Mobile Sync's keys).
    init(_ json: JSONObject, client: RESTClient) throws {
        try self.init(
            client: client, parentInfo: try ParentInfo(json: json),
            parentFieldlist: try RESTTargetFactory.fieldlist(json, "parentFieldlist") ?? [],
            parentSoqlFilter: json["parentSoqlFilter"]?.stringValue,
            childrenInfo: try ChildrenInfo(json: json),
            childrenFieldlist: try RESTTargetFactory.fieldlist(json, "childrenFieldlist") ?? [],
            relationshipType: RelationshipType(json: json),
            batchSize: json["batchSize"]?.intValue.map(Int.init), overlap: try TargetSupport.overlap(json))
    }
}

extension RelationshipType {
    /// `relationshipType` of a target's JSON: other than `MASTER_DETAIL` is a lookup, as in
    /// Mobile Sync.
    init(json: JSONObject) {
        self = json["relationshipType"]?.stringValue == "MASTER_DETAIL" ? .masterDetail : .lookup
    }
}

/// Reads a string member of a parent-children target's `parent` or `children` object.
private func member(_ object: JSONObject?, _ key: String, of part: String, default value: String? = nil)
    throws
    -> String
{
    guard let text = object?[key]?.stringValue ?? value, !text.isEmpty else {
        throw SyncError(.invalidTarget, "a parentChildren target's \"\(part)\" needs \"\(key)\"")
    }
    return text
}

extension ParentInfo {
    /// The `parent` of a target's JSON; ids and dates default to `Id` and `LastModifiedDate`.
    init(json: JSONObject) throws {
        let parent = json["parent"]?.objectValue
        guard parent != nil else {
            throw SyncError(.invalidTarget, "a parentChildren target needs \"parent\"")
        }
        self.init(
            sobjectType: try member(parent, "sobjectType", of: "parent"),
            soupName: try member(parent, "soupName", of: "parent"),
            idFieldName: try member(parent, "idFieldName", of: "parent", default: "Id"),
            modificationDateFieldName: try member(
                parent, "modificationDateFieldName", of: "parent", default: "LastModifiedDate"))
    }
}

extension ChildrenInfo {
    /// The `children` of a target's JSON.
    init(json: JSONObject) throws {
        let children = json["children"]?.objectValue
        guard children != nil else {
            throw SyncError(.invalidTarget, "a parentChildren target needs \"children\"")
        }
        self.init(
            sobjectType: try member(children, "sobjectType", of: "children"),
            sobjectTypePlural: try member(children, "sobjectTypePlural", of: "children"),
            soupName: try member(children, "soupName", of: "children"),
            parentIdFieldName: try member(children, "parentIdFieldName", of: "children"),
            idFieldName: try member(children, "idFieldName", of: "children", default: "Id"),
            modificationDateFieldName: try member(
                children, "modificationDateFieldName", of: "children", default: "LastModifiedDate"))
    }
}

extension TargetSupport {
    /// The checks both parent-children targets make: types, soups (two different ones) and the
    /// names of the id, date and relationship fields.
    static func requireTree(_ parent: ParentInfo, _ children: ChildrenInfo) throws {
        try requireType(parent.sobjectType)
        try requireType(children.sobjectType)
        for soup in [parent.soupName, children.soupName] where !Names.isValid(soup) {
            throw SyncError(
                .invalidTarget, "'\(soup.prefix(80))' is not a soup name; use 1-64 of A-Z a-z 0-9 . _ -")
        }
        guard parent.soupName != children.soupName else {
            throw SyncError(
                .invalidTarget, "parents and children need soups of their own, not both '\(parent.soupName)'")
        }
        try requireFields([
            parent.idFieldName, parent.modificationDateFieldName, children.sobjectTypePlural,
            children.parentIdFieldName, children.idFieldName, children.modificationDateFieldName,
        ])
    }
}
