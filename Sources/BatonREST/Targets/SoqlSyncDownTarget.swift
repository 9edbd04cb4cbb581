import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's SOQL sync down target: the query gets any missing `Id` and `LastModifiedDate`
/// fields, and `ORDER BY LastModifiedDate` when it has no top-level ORDER BY (then
/// ``isSyncDownSortedByLatestModification()`` is true). A resumed fetch adds
/// `LastModifiedDate > maxTimeStamp` (after done) or `>=` (after a stop) first in its WHERE.
///
/// ```swift
/// let target = try SoqlSyncDownTarget(client: client, query: "SELECT Name FROM Account", batchSize: 500)
/// ```
public struct SoqlSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    /// The query as the app gave it.
    public let query: String
    /// Records per page (1–2000); `nil` lets the server choose.
    public let batchSize: Int?
    public let idFieldName: String
    public let modificationDateFieldName: String
    let parsed: SOQLQuery

    /// - Throws: `SyncError.invalidTarget` when the query is not valid SOQL.
    public init(
        client: RESTClient, query: String, batchSize: Int? = nil, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate"
    ) throws {
        do {
            parsed = try SOQLQuery(parsing: query)
        } catch let error as SOQLError {
            throw SyncError(.invalidTarget, "the sync down query is not valid SOQL: \(error)")
        }
        if parsed.isCount || parsed.isAggregate {
            throw SyncError(
                .invalidTarget,
                "the sync down query \(parsed.isCount ? "counts records (SELECT COUNT())" : "aggregates (MAX(), MIN())") instead of selecting them; select the fields to sync"
            )
        }
        if let batchSize, !(1...2000).contains(batchSize) {
            throw SyncError(.invalidTarget, "batch size must be between 1 and 2000, not \(batchSize)")
        }
        self.client = client
        self.query = query
        self.batchSize = batchSize
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "soql", "query": .string(query), "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
        if let batchSize { object["batchSize"] = .int(Int64(batchSize)) }
        return object
    }

    /// The query sent for a full fetch: missing fields added, ordered when it was not.
    public var fetchQuery: SOQLQuery {
        parsed.addingFields([idFieldName, modificationDateFieldName]).addingOrderBy(modificationDateFieldName)
    }

    public func isSyncDownSortedByLatestModification() -> Bool {
        guard let first = fetchQuery.orderBy.first else { return false }
        return first.field.lowercased() == modificationDateFieldName.lowercased() && first.ascending
    }

    /// The query for a run resuming from `maxTimeStamp` (-1: from the start).
    public func query(maxTimeStamp: Int64, inclusive: Bool) -> SOQLQuery {
        guard maxTimeStamp >= 0 else { return fetchQuery }
        return fetchQuery.addingTimeStampFilter(
            field: modificationDateFieldName, milliseconds: maxTimeStamp, inclusive: inclusive)
    }

    /// The first page of a run asks for at most this many records (Salesforce's smallest batch),
    /// so the first commit — and the progress an app shows — comes soon after a start or a
    /// resume; later pages ask for ``batchSize``.
    public static let firstPageSize = 200

    /// Asks first for the server's newest stamp on the object (`SELECT MAX(LastModifiedDate)
    /// FROM Account`, whatever the query's filter: one aggregate row, no records), then starts
    /// the query: every record the query has yet to serve was modified before the query
    /// started, so a served stamp later than the answer marks a record modified while the query
    /// was paged.
    public func startFetch(maxTimeStamp: Int64, inclusive: Bool) async throws -> SyncDownPage {
        let highWater = try await TargetSupport.highWaterMark(
            of: parsed.object, field: modificationDateFieldName, client: client)
        let page = try await client.queryFirstPage(
            query(maxTimeStamp: maxTimeStamp, inclusive: inclusive).soql,
            batchSize: min(batchSize ?? 2000, Self.firstPageSize))
        return SyncDownPage(
            records: page.records, totalSize: page.totalSize, next: page.done ? nil : page.nextRecordsUrl,
            highWaterMark: highWater)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next else { return nil }
        let fetched = try await client.queryNextPage(next, batchSize: batchSize ?? 2000)
        return SyncDownPage(
            records: fetched.records, totalSize: page.totalSize,
            next: fetched.done ? nil : fetched.nextRecordsUrl)
    }

    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        var idQuery = parsed.idQuery
        if idFieldName != "Id" { idQuery.fields = [.field(idFieldName)] }
        let page = try await client.queryFirstPage(idQuery.soql, batchSize: 2000)
        return RemoteIdPage(ids: ids(page), next: page.done ? nil : page.nextRecordsUrl)
    }

    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? {
        guard let next = page.next else { return nil }
        let fetched = try await client.queryNextPage(next)
        return RemoteIdPage(ids: ids(fetched), next: fetched.done ? nil : fetched.nextRecordsUrl)
    }

    func ids(_ page: QueryPage) -> [String] {
        page.records.compactMap { $0[idFieldName]?.stringValue }
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }
}
