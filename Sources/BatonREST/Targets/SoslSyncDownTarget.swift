import BatonStore
import BatonSync
import Foundation
import SOQL

/// Mobile Sync's SOSL target (`SFSoslSyncDownTarget`): the records a search finds, fetched whole
/// on every run (a search has no time-stamp filter) in one page of at most 2,000; clean resync
/// ghosts runs the search again. The search is parsed (``SOSLQuery``) when the target is made,
/// so one that cannot run is refused then.
///
/// ```swift
/// let target = try SoslSyncDownTarget(client: client, query: "FIND {Acme} IN NAME FIELDS RETURNING Account(Id, Name)")
/// ```
public struct SoslSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let query: String
    public let idFieldName: String
    public let modificationDateFieldName: String

    /// - Throws: `SyncError.invalidTarget` when the query is not a SOSL search.
    public init(
        client: RESTClient, query: String, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate"
    ) throws {
        do {
            _ = try SOSLQuery(parsing: query)
        } catch let error as SOQLError {
            throw SyncError(.invalidTarget, "the sync down query is not a valid SOSL search: \(error)")
        }
        self.client = client
        self.query = query
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    public var json: JSONObject {
        [
            "type": "sosl", "query": .string(query), "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
    }

    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let records = try await search()
        return SyncDownPage(records: records, totalSize: records.count, next: nil)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? { nil }

    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        RemoteIdPage(ids: try await search().compactMap { $0[idFieldName]?.stringValue }, next: nil)
    }

    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }

    /// `GET search?q=…`: the `searchRecords`, without their `attributes`.
    func search() async throws -> [JSONObject] {
        let encoded = query.addingPercentEncoding(withAllowedCharacters: .rfc3986Unreserved) ?? query
        let body = try await client.send(.GET, "\(client.apiPath)/search?q=\(encoded)", idempotent: true).body
        guard let found = body.value(atPath: "searchRecords")?.arrayValue else {
            throw RESTError(.malformedResponse, "search response lacks searchRecords")
        }
        return found.compactMap { value in
            guard var record = value.objectValue else { return nil }
            record["attributes"] = nil
            return record
        }
    }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters: everything else in a query parameter is escaped.
    static let rfc3986Unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
