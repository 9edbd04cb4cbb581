import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's refresh target (`SFRefreshSyncDownTarget`): fetches again, by id, the records
/// already in a soup, `countIdsPerSoql` ids a query, in the soup's id order. A run after the
/// first asks only for records modified since the sync's `maxTimeStamp`. Clean resync ghosts
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

    /// - Throws: `SyncError.invalidTarget` for a bad type, field or count.
    public init(
        client: RESTClient, store: SharedStore?, soupName: String, objectType: String, fieldlist: [String],
        countIdsPerSoql: Int = 500, idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate"
    ) throws {
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
        [
            "type": "refresh", "soupName": .string(soupName), "sobjectType": .string(objectType),
            "fieldlist": .array(fieldlist.map(JSONValue.string)),
            "coundIdsPerSoql": .int(Int64(countIdsPerSoql)),
            "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
    }

    public func isSyncDownSortedByLatestModification() -> Bool { false }

    /// The run's state between pages, in ``SyncDownPage/next``: `PAGE:MAXTIMESTAMP:INCLUSIVE`.
    struct Position {
        var page: Int
        var maxTimeStamp: Int64
        var inclusive: Bool

        var text: String { "\(page):\(maxTimeStamp):\(inclusive)" }

        init(page: Int, maxTimeStamp: Int64, inclusive: Bool) {
            self.page = page
            self.maxTimeStamp = maxTimeStamp
            self.inclusive = inclusive
        }

        init?(_ text: String) {
            let parts = text.split(separator: ":")
            guard parts.count == 3, let page = Int(parts[0]), let stamp = Int64(parts[1]) else { return nil }
            self.init(page: page, maxTimeStamp: stamp, inclusive: parts[2] == "true")
        }
    }

    public func startFetch(maxTimeStamp: Int64, inclusive: Bool) async throws -> SyncDownPage {
        let store = try requireStore()
        let soup = soupName
        let total = try await store.read { reader in
            try reader.soupIfExists(soup) != nil ? reader.count(in: soup) : 0
        }
        // The newest stamp before the first query: records changed while the run goes on have a
        // later one, so the run's maxTimeStamp never passes them (see SoqlSyncDownTarget).
        let highWater = try await TargetSupport.highWaterMark(
            of: objectType, field: modificationDateFieldName, client: client)
        var page = try await fetch(
            Position(page: 0, maxTimeStamp: maxTimeStamp, inclusive: inclusive), total: total)
        page.highWaterMark = highWater
        return page
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next, let position = Position(next) else { return nil }
        return try await fetch(position, total: page.totalSize)
    }

    /// Page `position.page` of the soup's ids, fetched from the server.
    func fetch(_ position: Position, total: Int) async throws -> SyncDownPage {
        let store = try requireStore()
        let (soup, idField, size) = (soupName, idFieldName, countIdsPerSoql)
        let ids = try await store.read { reader -> [String] in
            guard try reader.soupIfExists(soup) != nil else { return [] }
            return try reader.query(
                SoupQuery(orderBy: [.init(idField)]).page(position.page, size: size), in: soup
            ).compactMap { $0.record[idField]?.stringValue }
        }
        let more = (position.page + 1) * size < total
        var next = position
        next.page += 1
        var records: [JSONObject] = []
        if !ids.isEmpty {
            var query = TargetSupport.idQuery(fields: fieldlist, of: objectType, ids: ids, idField: idField)
            if position.maxTimeStamp > 0 {
                query = query.addingTimeStampFilter(
                    field: modificationDateFieldName, milliseconds: position.maxTimeStamp,
                    inclusive: position.inclusive)
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
    /// The server's newest `field` stamp of `type` (`SELECT MAX(field) FROM type`), -1 for none.
    static func highWaterMark(of type: String, field: String, client: RESTClient) async throws -> Int64 {
        let page = try await client.queryFirstPage(
            SOQLQuery(fields: [.aggregate(.max, field)], object: type).soql)
        return page.records.first?["expr0"]?.stringValue.flatMap(DateTimeLiteral.milliseconds) ?? -1
    }
}
