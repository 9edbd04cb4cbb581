import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's SOQL sync down target: the query gets any missing `Id` and `LastModifiedDate`
/// fields, and `ORDER BY Id` when it has no top-level ORDER BY (then ``resumesAfterId`` is true:
/// a stopped run resumes after the last id it saved). A run after the first adds
/// `LastModifiedDate >= modifiedSince` (``SyncDownPosition``) first in its WHERE, and a resumed
/// one `Id > 'last id saved'`.
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
    /// How long after its stamp a server transaction may still commit (``SyncDownTarget/overlap``).
    public let overlap: Duration
    let parsed: SOQLQuery

    /// - Throws: `SyncError.invalidTarget` when the query is not valid SOQL, or the batch size or
    ///   overlap is out of range.
    public init(
        client: RESTClient, query: String, batchSize: Int? = nil, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate",
        overlap: Duration = SyncDownPosition.defaultOverlap
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
        try TargetSupport.requireOverlap(overlap)
        self.client = client
        self.query = query
        self.batchSize = batchSize
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
        self.overlap = overlap
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "soql", "query": .string(query), "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
        if let batchSize { object["batchSize"] = .int(Int64(batchSize)) }
        TargetSupport.addOverlap(overlap, to: &object)
        return object
    }

    /// The query sent for a full fetch: missing fields added, ordered by id when it was not
    /// ordered.
    public var fetchQuery: SOQLQuery {
        parsed.addingFields([idFieldName, modificationDateFieldName]).addingOrderBy(idFieldName)
    }

    /// True when the fetch is ordered by id alone, ascending, with no LIMIT or OFFSET: the
    /// records after the last id saved are then exactly those the run had still to fetch.
    public var resumesAfterId: Bool {
        let query = fetchQuery
        return query.orderBy.count == 1 && query.isOrdered(by: idFieldName) && query.orderBy[0].ascending
            && query.limit == nil && query.offset == nil
    }

    /// Mobile Sync's name: true when the query the target sends is ordered by the modification
    /// date (an app's own `ORDER BY LastModifiedDate`). Baton orders a query without ORDER BY by
    /// id (``resumesAfterId``), so this is false for such a query.
    public func isSyncDownSortedByLatestModification() -> Bool {
        guard let first = fetchQuery.orderBy.first else { return false }
        return first.field.lowercased() == modificationDateFieldName.lowercased() && first.ascending
    }

    /// The query for a fetch from `start`: `LastModifiedDate >= since` and, resuming, `Id > 'id'`
    /// first in the WHERE.
    public func query(_ start: FetchStart) -> SOQLQuery {
        var query = fetchQuery
        if let afterId = start.afterId, resumesAfterId {
            query = query.addingFilterFirst(field: idFieldName, op: .greater, value: .string(afterId))
        }
        if let since = start.modifiedSince {
            query = query.addingTimeStampFilter(
                field: modificationDateFieldName, milliseconds: since, inclusive: true)
        }
        return query
    }

    /// The first page of a run asks for at most this many records (Salesforce's smallest batch),
    /// so the first commit — and the progress an app shows — comes soon after a start or a
    /// resume; later pages ask for ``batchSize``.
    public static let firstPageSize = 200

    /// Reads the server's clock first (one request, no records), then starts the query. A query
    /// with LIMIT or OFFSET selects a window, not every record modified since: its runs do not
    /// read the clock, so the next run starts where this one did and asks for the window again.
    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let windowed = parsed.limit != nil || parsed.offset != nil
        let serverTime =
            windowed
            ? nil
            : try await TargetSupport.serverTime(
                of: parsed.object, field: modificationDateFieldName, condition: parsed.condition?.soql,
                client: client)
        let page = try await client.queryFirstPage(
            query(start).soql, batchSize: min(batchSize ?? 2000, Self.firstPageSize))
        return SyncDownPage(
            records: page.records, totalSize: page.totalSize, next: page.done ? nil : page.nextRecordsUrl,
            serverTime: serverTime)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next else { return nil }
        let fetched = try await client.queryNextPage(next, batchSize: batchSize ?? 2000)
        return SyncDownPage(
            records: fetched.records, totalSize: page.totalSize,
            next: fetched.done ? nil : fetched.nextRecordsUrl)
    }

    /// The query's type's deletions (`sObject Get Deleted`); nil when the sync's ids are not
    /// Salesforce ids (an `idFieldName` other than `Id`), which the delete log does not name.
    public func deletedSince(_ since: Int64, until: Int64) async throws -> DeletedSince? {
        guard idFieldName == "Id" else { return nil }
        return try await TargetSupport.deletedSince(
            since, until: until, types: [parsed.object], client: client)
    }

    public func ghostCleaningServerTime() async throws -> Int64? {
        try await TargetSupport.serverTime(
            of: parsed.object, field: modificationDateFieldName, condition: nil, client: client)
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
