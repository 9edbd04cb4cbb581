import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's refresh target (`SFRefreshSyncDownTarget`): fetches again, by id, the records
/// already in a soup, `countIdsPerSoql` ids a query, in the soup's id order. A run after the
/// first asks only for records modified since the previous run (``SyncDownPosition``). Clean resync ghosts
/// removes the local records the server no longer has.
///
/// It reads the soup, so the factory that rebuilds it needs the store
/// (`RESTTargetFactory(client:store:)`).
public struct RefreshSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let store: SharedStore?
    public let soupName: String
    public let objectType: String
    public let fieldlist: [String]
    /// Ids per query (Mobile Sync's `countIdsPerSoql`, persisted as its `coundIdsPerSoql`).
    public let countIdsPerSoql: Int
    public let idFieldName: String
    public let modificationDateFieldName: String
    public let overlap: Duration

    /// - Throws: `SyncError.invalidTarget` for a bad type, field, count or overlap.
    public init(
        client: RESTClient, store: SharedStore?, soupName: String, objectType: String, fieldlist: [String],
        countIdsPerSoql: Int = 500, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate",
        overlap: Duration = SyncDownPosition.defaultOverlap
    ) throws {
        try TargetSupport.requireOverlap(overlap)
        self.overlap = overlap
        try TargetSupport.requireType(objectType)
        try TargetSupport.requireFields(fieldlist)
        guard (1...2000).contains(countIdsPerSoql) else {
            throw SyncError(
                .invalidTarget, "countIdsPerSoql must be between 1 and 2000, not \(countIdsPerSoql)")
        }
        self.client = client
        self.store = store
        self.soupName = soupName
        self.objectType = objectType
        self.fieldlist = fieldlist
        self.countIdsPerSoql = countIdsPerSoql
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "refresh", "soupName": .string(soupName), "sobjectType": .string(objectType),
            "fieldlist": .array(fieldlist.map(JSONValue.string)),
            "coundIdsPerSoql": .int(Int64(countIdsPerSoql)),
            "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
        TargetSupport.addOverlap(overlap, to: &object)
        return object
    }

    /// The run's state between pages, in ``SyncDownPage/next``: `MODIFIEDSINCE:LASTID` (-1: all).
    /// The soup is read in id order after the last id asked for, so entries an app adds or
    /// removes meanwhile shift nothing: no id is skipped.
    struct Position {
        var modifiedSince: Int64?
        /// The last server id already asked for; nil before the first batch.
        var afterId: String?

        var text: String { "\(modifiedSince ?? -1):\(afterId ?? "")" }

        init(modifiedSince: Int64?, afterId: String?) {
            self.modifiedSince = modifiedSince
            self.afterId = afterId
        }

        init?(_ text: String) {
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let since = Int64(parts[0]) else { return nil }
            self.init(
                modifiedSince: since < 0 ? nil : since, afterId: parts[1].isEmpty ? nil : String(parts[1]))
        }
    }

    /// Reads the server's clock (see ``SoqlSyncDownTarget``), then the first batch of ids.
    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let store = try requireStore()
        let soup = soupName
        let total = try await store.read { reader in
            try reader.soupIfExists(soup) != nil ? reader.count(in: soup) : 0
        }
        let serverTime = try await TargetSupport.serverTime(
            of: objectType, field: modificationDateFieldName, condition: nil, client: client)
        var page = try await fetch(Position(modifiedSince: start.modifiedSince, afterId: nil), total: total)
        page.serverTime = serverTime
        return page
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next, let position = Position(next) else { return nil }
        return try await fetch(position, total: page.totalSize)
    }

    /// The soup's next `countIdsPerSoql` server ids after `position.afterId`, fetched from the
    /// server.
    func fetch(_ position: Position, total: Int) async throws -> SyncDownPage {
        let store = try requireStore()
        let (soup, idField, size) = (soupName, idFieldName, countIdsPerSoql)
        let after = position.afterId
        let (ids, more) = try await store.read { reader -> ([String], Bool) in
            guard try reader.soupIfExists(soup) != nil else { return ([], false) }
            // The range is inclusive (the last id asked for comes back, and is dropped), and one
            // more than a batch says whether another batch follows.
            let query = SoupQuery(
                where: [.range(idField, from: .string(after ?? ""), to: nil)], orderBy: [.init(idField)],
                limit: size + 2)
            let found = try reader.query(query, in: soup).compactMap { $0.record[idField]?.stringValue }
                .filter { $0 != after }
            return (Array(found.prefix(size)), found.count > size)
        }
        let next = Position(modifiedSince: position.modifiedSince, afterId: ids.last)
        var records: [JSONObject] = []
        if !ids.isEmpty {
            var query = TargetSupport.idQuery(fields: fieldlist, of: objectType, ids: ids, idField: idField)
            if let since = position.modifiedSince {
                query = query.addingTimeStampFilter(
                    field: modificationDateFieldName, milliseconds: since, inclusive: true)
            }
            for try await fetched in client.query(query.soql) { records += fetched.records }
        }
        return SyncDownPage(records: records, totalSize: total, next: more ? next.text : nil)
    }

    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        throw SyncError(.invalidTarget, "the refresh target checks ghosts by existence")
    }

    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }

    public var checksGhostsByExistence: Bool { true }

    public func existingIds(among ids: [String]) async throws -> [String] {
        try await TargetSupport.existingIds(ids, of: objectType, idField: idFieldName, client: client)
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }

    func requireStore() throws -> SharedStore {
        guard let store else {
            throw SyncError(
                .invalidTarget, "the refresh target reads its soup: build it (or its factory) with the store")
        }
        return store
    }
}

extension TargetSupport {
    /// The server's clock before a fetch's query (``SyncDownPosition``): the `Date` of the
    /// server's answer to `GET /services/data/vNN.0`, which touches no object (some objects
    /// refuse a query without a filter). A server that sends no `Date`, or does not route that
    /// call, is asked for its newest stamp of what the target selects instead
    /// (`SELECT MAX(field) FROM type WHERE condition`, one aggregate row, no records), which is no
    /// later than its clock; nil when it tells neither.
    static func serverTime(of type: String, field: String, condition: String?, client: RESTClient)
        async throws -> Int64?
    {
        do {
            if let time = try await client.serverTime() { return time }
        } catch let error as RESTError where [404, 405].contains(error.status ?? 0) {
            // Not routed there: the aggregate below.
        }
        var soql = SOQLQuery(fields: [.aggregate(.max, field)], object: type).soql
        if let condition { soql += " WHERE \(condition)" }
        let page = try await client.queryFirstPage(soql)
        return page.serverTime
            ?? page.records.first?["expr0"]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }

    /// An overlap a target accepts: whole seconds, from none to a day.
    static func requireOverlap(_ overlap: Duration) throws {
        let millis = overlap.inWholeMilliseconds
        guard millis >= 0, millis <= 86_400_000, millis % 1000 == 0 else {
            throw SyncError(
                .invalidTarget, "overlapSeconds must be a whole number of seconds from 0 to 86400")
        }
    }

    /// `overlapSeconds` in a target's JSON, when it is not the default.
    static func addOverlap(_ overlap: Duration, to object: inout JSONObject) {
        guard overlap != SyncDownPosition.defaultOverlap else { return }
        object["overlapSeconds"] = .int(overlap.inWholeMilliseconds / 1000)
    }

    /// The overlap a target's JSON gives (`overlapSeconds`), or the default.
    static func overlap(_ json: JSONObject) throws -> Duration {
        guard let value = json["overlapSeconds"], !value.isNull else {
            return SyncDownPosition.defaultOverlap
        }
        guard let seconds = value.intValue, (0...86_400).contains(seconds) else {
            throw SyncError(
                .invalidTarget, "overlapSeconds must be a whole number of seconds from 0 to 86400")
        }
        return .seconds(seconds)
    }
}
