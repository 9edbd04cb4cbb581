import BatonStore

/// One page of a sync down fetch.
public struct SyncDownPage: Sendable {
    /// The records, as the server sent them.
    public var records: [JSONObject]
    /// Records the whole fetch expects (for progress).
    public var totalSize: Int
    /// Where the next page is; `nil` on the last page.
    public var next: String?
    /// On a fetch's first page: the newest modification time stamp the server held just before
    /// the query started (-1 when it held no record; `nil` when the target cannot tell).
    ///
    /// The server fixes a query's ordered ids when it starts but reads each page's records when
    /// it serves the page, so a record modified meanwhile comes with a later stamp than this,
    /// out of the query's order. The manager never resumes from such a stamp.
    public var highWaterMark: Int64?

    public init(records: [JSONObject], totalSize: Int, next: String?, highWaterMark: Int64? = nil) {
        self.records = records
        self.totalSize = totalSize
        self.next = next
        self.highWaterMark = highWaterMark
    }
}

/// One page of the remote ids a sync down's query matches (for clean resync ghosts).
public struct RemoteIdPage: Sendable {
    public var ids: [String]
    /// For a parent-children target: the ids of these parents' children.
    public var childIds: [String]
    public var next: String?

    public init(ids: [String], childIds: [String] = [], next: String?) {
        self.ids = ids
        self.childIds = childIds
        self.next = next
    }
}

/// Where a parent-children target's children go: each fetched parent holds its children under
/// ``relationshipKey`` (`Contacts`); they are saved in their own soup with the parent's server id
/// in ``parentIdFieldName``.
public struct ChildrenSoup: Sendable, Hashable {
    public var soupName: String
    public var idFieldName: String
    public var parentIdFieldName: String
    /// The key of a parent's children in a fetched record (Mobile Sync's `sobjectTypePlural`).
    public var relationshipKey: String

    public init(soupName: String, idFieldName: String, parentIdFieldName: String, relationshipKey: String) {
        self.soupName = soupName
        self.idFieldName = idFieldName
        self.parentIdFieldName = parentIdFieldName
        self.relationshipKey = relationshipKey
    }
}

/// Where a sync down gets its records, page by page (Mobile Sync's `SyncDownTarget`).
///
/// Pages are pulled one at a time by the manager, so a stop between pages, or a cancelled
/// request in flight, ends the fetch promptly.
public protocol SyncDownTarget: Sendable {
    /// The description persisted with the sync; a ``SyncTargetFactory`` rebuilds the target.
    var json: JSONObject { get }
    /// The field holding the server id (`Id`).
    var idFieldName: String { get }
    /// The field holding the modification date (`LastModifiedDate`).
    var modificationDateFieldName: String { get }
    /// True when pages come in modification order, so `maxTimeStamp` can be saved with
    /// every page and a stopped fetch resumes where it left off. The saved mark is then the
    /// time stamp of each page's last record that was not modified while the query was paged.
    func isSyncDownSortedByLatestModification() -> Bool
    /// The first page of records modified after `maxTimeStamp` (at or after it when
    /// `inclusive`; every record when it is -1), with the server's ``SyncDownPage/highWaterMark``
    /// when the target can ask for it.
    func startFetch(maxTimeStamp: Int64, inclusive: Bool) async throws -> SyncDownPage
    /// The page after `page`, or `nil` when it was the last.
    func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage?
    /// The first page of every remote id the target's query matches (no time-stamp filter).
    func startRemoteIdFetch() async throws -> RemoteIdPage
    /// The page after `page`, or `nil`.
    func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage?
    /// A record's modification time stamp in ms since 1970, if it has one.
    func modificationTimeStamp(of record: JSONObject) -> Int64?
    /// True when clean resync ghosts asks the server which local records still exist
    /// (``existingIds(among:)``) instead of fetching every id the target selects: Mobile Sync's
    /// MRU and refresh targets, whose selection is not a query.
    var checksGhostsByExistence: Bool { get }
    /// Which of `ids` (at most 500) the server still has.
    func existingIds(among ids: [String]) async throws -> [String]
    /// For a parent-children target: the soup its records' children are saved in. A tree whose
    /// parent or any child is dirty is left alone under `leaveIfChanged`, and clean resync
    /// ghosts cleans the children soup too, with the child ids of ``RemoteIdPage/childIds``.
    var childrenSoup: ChildrenSoup? { get }
    /// Every modification stamp a fetched record carries, its children's included: a complete
    /// run's `maxTimeStamp` may reach the newest of them (a page's resume mark uses
    /// ``modificationTimeStamp(of:)``, the stamp the fetch is ordered by).
    func timeStamps(of record: JSONObject) -> [Int64]
}

extension SyncDownTarget {
    public var childrenSoup: ChildrenSoup? { nil }

    public func timeStamps(of record: JSONObject) -> [Int64] {
        modificationTimeStamp(of: record).map { [$0] } ?? []
    }

    public var checksGhostsByExistence: Bool { false }

    public func existingIds(among ids: [String]) async throws -> [String] {
        throw SyncError(.invalidTarget, "this target tells ghosts by its remote ids, not by existence")
    }
}
