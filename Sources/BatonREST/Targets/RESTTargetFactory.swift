import BatonStore
import BatonSync

/// Rebuilds sync down targets (Mobile Sync's `soql`, `sosl`, `mru`, `refresh`, `metadata` and
/// `layout` types) and REST sync up targets from their persisted JSON, bound to one client (one
/// server and token), so any process can resume any sync. The refresh target reads its soup, so
/// it needs the `store`.
public struct RESTTargetFactory: SyncTargetFactory {
    public let client: RESTClient
    public let store: SharedStore?

    public init(client: RESTClient, store: SharedStore? = nil) {
        self.client = client
        self.store = store
    }

    /// The sync down target types this factory builds.
    public static let syncDownTypes = [
        "soql", "sosl", "mru", "refresh", "parentChildren", "metadata", "layout",
    ]

    public func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget {
        let idField = json["idFieldName"]?.stringValue ?? "Id"
        let dateField = json["modificationDateFieldName"]?.stringValue ?? "LastModifiedDate"
        func string(_ key: String) throws -> String {
            guard let value = json[key]?.stringValue, !value.isEmpty else {
                throw SyncError(
                    .invalidTarget, "a \(json["type"]?.stringValue ?? "") target needs \"\(key)\"")
            }
            return value
        }
        switch json["type"]?.stringValue {
        case "soql":
            return try SoqlSyncDownTarget(
                client: client, query: try string("query"),
                batchSize: json["batchSize"]?.intValue.map(Int.init),
                idFieldName: idField, modificationDateFieldName: dateField,
                overlap: try TargetSupport.overlap(json))
        case "sosl":
            return try SoslSyncDownTarget(
                client: client, query: try string("query"), idFieldName: idField,
                modificationDateFieldName: dateField)
        case "mru":
            return try MruSyncDownTarget(
                client: client, objectType: try string("sobjectType"),
                fieldlist: try Self.fieldlist(json, "fieldlist") ?? [], idFieldName: idField,
                modificationDateFieldName: dateField)
        case "refresh":
            return try RefreshSyncDownTarget(
                client: client, store: store, soupName: try string("soupName"),
                objectType: try string("sobjectType"),
                fieldlist: try Self.fieldlist(json, "fieldlist") ?? [],
                countIdsPerSoql: json["coundIdsPerSoql"]?.intValue.map(Int.init) ?? 500, idFieldName: idField,
                modificationDateFieldName: dateField, overlap: try TargetSupport.overlap(json))
        case "parentChildren":
            return try ParentChildrenSyncDownTarget(json, client: client)
        case "metadata":
            return try MetadataSyncDownTarget(client: client, objectType: try string("sobjectType"))
        case "layout":
            return try LayoutSyncDownTarget(
                client: client, objectType: try string("sobjectType"),
                layoutType: json["layoutType"]?.stringValue)
        default:
            throw SyncError(
                .invalidTarget,
                "unknown sync down target type '\(json["type"]?.stringValue ?? "none")' (known: \(Self.syncDownTypes.joined(separator: ", ")))"
            )
        }
    }

    public func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget {
        if json["type"]?.stringValue == "parentChildren" {
            return try ParentChildrenSyncUpTarget(json, client: client)
        }
        guard json["type"]?.stringValue == "rest", let objectType = json["objectType"]?.stringValue else {
            throw SyncError(
                .invalidTarget, "unknown sync up target type '\(json["type"]?.stringValue ?? "none")'")
        }
        return try RESTSyncUpTarget(
            client: client, objectType: objectType,
            externalIdFieldName: json["externalIdFieldName"]?.stringValue ?? "BatonExternalId__c",
            batchSize: json["batchSize"]?.intValue.map(Int.init) ?? 200,
            idFieldName: json["idFieldName"]?.stringValue ?? "Id",
            modificationDateFieldName: json["modificationDateFieldName"]?.stringValue ?? "LastModifiedDate",
            createFieldlist: try Self.fieldlist(json, "createFieldlist"),
            updateFieldlist: try Self.fieldlist(json, "updateFieldlist"))
    }

    /// A list of field names under `key`, if there is one.
    static func fieldlist(_ json: JSONObject, _ key: String) throws -> [String]? {
        guard let value = json[key], !value.isNull else { return nil }
        let names = value.arrayValue?.compactMap(\.stringValue)
        guard let names, names.count == value.arrayValue?.count else {
            throw SyncError(.invalidTarget, "\(key) must be a list of field names")
        }
        return names
    }
}
