import BatonStore
import BatonSync

/// Rebuilds SOQL sync down and REST sync up targets from their persisted JSON, bound to one
/// client (one server and token), so any process can resume any sync.
public struct RESTTargetFactory: SyncTargetFactory {
    public let client: RESTClient

    public init(client: RESTClient) {
        self.client = client
    }

    public func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget {
        guard json["type"]?.stringValue == "soql", let query = json["query"]?.stringValue else {
            throw SyncError(
                .invalidTarget, "unknown sync down target type '\(json["type"]?.stringValue ?? "none")'")
        }
        return try SoqlSyncDownTarget(
            client: client, query: query, batchSize: json["batchSize"]?.intValue.map(Int.init),
            idFieldName: json["idFieldName"]?.stringValue ?? "Id",
            modificationDateFieldName: json["modificationDateFieldName"]?.stringValue ?? "LastModifiedDate")
    }

    public func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget {
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
