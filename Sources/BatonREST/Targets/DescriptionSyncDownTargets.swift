import BatonStore
import BatonSync

/// Mobile Sync's metadata target (`SFMetadataSyncDownTarget`): the object's `describe`, saved as
/// one record whose `Id` is the object's name (`Account`). Each run fetches it again and replaces
/// the record; clean resync ghosts keeps it.
public struct MetadataSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let objectType: String

    public init(client: RESTClient, objectType: String) throws {
        try TargetSupport.requireType(objectType)
        self.client = client
        self.objectType = objectType
    }

    public var json: JSONObject { ["type": "metadata", "sobjectType": .string(objectType)] }
    public var idFieldName: String { "Id" }
    public var modificationDateFieldName: String { "LastModifiedDate" }
    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let body = try await client.send(
            .GET, "\(client.apiPath)/sobjects/\(objectType)/describe", idempotent: true
        ).body
        return try TargetSupport.singleRecordPage(body, id: objectType)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? { nil }
    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        RemoteIdPage(ids: [objectType], next: nil)
    }
    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }
    public func modificationTimeStamp(of record: JSONObject) -> Int64? { nil }
}

/// Mobile Sync's layout target (`SFLayoutSyncDownTarget`): the UI API's layout of the object
/// (`GET ui-api/layout/TYPE?layoutType=Compact`), saved as one record whose `Id` is
/// `TYPE-LAYOUTTYPE` (`Account-Compact`). Without a layout type the server's default (`Full`)
/// is fetched and the `Id` says `Full`.
public struct LayoutSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let objectType: String
    public let layoutType: String?

    public init(client: RESTClient, objectType: String, layoutType: String? = nil) throws {
        try TargetSupport.requireType(objectType)
        if let layoutType, !Names.isValid(layoutType) {
            throw SyncError(.invalidTarget, "'\(layoutType.prefix(40))' is not a layout type (Full, Compact)")
        }
        self.client = client
        self.objectType = objectType
        self.layoutType = layoutType
    }

    public var json: JSONObject {
        var object: JSONObject = ["type": "layout", "sobjectType": .string(objectType)]
        if let layoutType { object["layoutType"] = .string(layoutType) }
        return object
    }

    public var idFieldName: String { "Id" }
    public var modificationDateFieldName: String { "LastModifiedDate" }
    /// The record's `Id`.
    public var recordId: String { "\(objectType)-\(layoutType ?? "Full")" }

    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let query = layoutType.map { "?layoutType=\($0)" } ?? ""
        let body = try await client.send(
            .GET, "\(client.apiPath)/ui-api/layout/\(objectType)\(query)", idempotent: true
        ).body
        return try TargetSupport.singleRecordPage(body, id: recordId)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? { nil }
    public func startRemoteIdFetch() async throws -> RemoteIdPage { RemoteIdPage(ids: [recordId], next: nil) }
    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }
    public func modificationTimeStamp(of record: JSONObject) -> Int64? { nil }
}

extension TargetSupport {
    /// A whole response as the one record of a page, under `Id`.
    static func singleRecordPage(_ body: JSONValue, id: String) throws -> SyncDownPage {
        guard var record = body.objectValue else {
            throw RESTError(.malformedResponse, "expected a JSON object")
        }
        record["Id"] = .string(id)
        return SyncDownPage(records: [record], totalSize: 1, next: nil)
    }
}
