import BatonStore

/// One page of a sync down fetch.
public struct SyncDownPage: Sendable {
    /// The records, as the server sent them.
    public var records: [JSONObject]
    /// Records the whole fetch expects (for progress).
    public var totalSize: Int
    /// Where the next page is; `nil` on the last page.
    public var next: String?
    /// On a fetch's first page: the server's clock (ms since 1970) when the fetch started, read
    /// before its query was sent; `nil` when the target cannot tell. See ``SyncDownPosition``.
    public var serverTime: Int64?

    public init(records: [JSONObject], totalSize: Int, next: String?, serverTime: Int64? = nil) {
        self.records = records
        self.totalSize = totalSize
        self.next = next
        self.serverTime = serverTime
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

/// What the server says was deleted in a window, for clean resync ghosts that looks only at
/// changes (Salesforce's `sObject Get Deleted`).
public enum DeletedSince: Sendable, Hashable {
    /// The ids deleted in the window (a parent-children target's children apart), and where the
    /// server's answer ends: the next window starts there.
    case deleted(ids: Set<String>, childIds: Set<String>, coveredUntil: Int64)
    /// The window is too short for the server to answer (Salesforce: a minute or less, seconds
    /// ignored): nothing new can be known yet.
    case tooSoon
    /// The server no longer holds the window's start (past its retention, or purged), with its
    /// reason: only a full comparison can tell what is gone.
    case expired(String)
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
    /// The field holding a child's modification stamp.
    public var modificationDateFieldName: String

    public init(
        soupName: String, idFieldName: String, parentIdFieldName: String, relationshipKey: String,
        modificationDateFieldName: String = "LastModifiedDate"
    ) {
        self.soupName = soupName
        self.idFieldName = idFieldName
        self.parentIdFieldName = parentIdFieldName
        self.relationshipKey = relationshipKey
        self.modificationDateFieldName = modificationDateFieldName
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
    /// True when the fetch is ordered by ``idFieldName``, so a stopped run resumes after the last
    /// record it saved (``FetchStart/afterId``) instead of starting over.
    var resumesAfterId: Bool { get }
    /// How long after its stamp a server transaction may still commit: each run after the first
    /// fetches again the records stamped that long before the previous run started, so that one
    /// which became visible late is not missed (``SyncDownPosition``).
    var overlap: Duration { get }
    /// The first page of the records `start` asks for, with the server's
    /// ``SyncDownPage/serverTime`` when the target can read it.
    func startFetch(_ start: FetchStart) async throws -> SyncDownPage
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
    /// Every modification stamp a fetched record carries, its children's included: the sync's
    /// `maxTimeStamp` is the newest of them saved.
    func timeStamps(of record: JSONObject) -> [Int64]
    /// What the server deleted from `since` to `until` (ms since 1970), of every type the target
    /// selects; nil when the target cannot tell, and clean resync ghosts compares every id.
    func deletedSince(_ since: Int64, until: Int64) async throws -> DeletedSince?
    /// The server's clock now (ms since 1970), read before a full comparison of ids so that the
    /// next clean asks for what was deleted from then; nil when the target cannot read it.
    func ghostCleaningServerTime() async throws -> Int64?
}

extension SyncDownTarget {
    public var childrenSoup: ChildrenSoup? { nil }

    public var resumesAfterId: Bool { false }

    public var overlap: Duration { SyncDownPosition.defaultOverlap }

    public func timeStamps(of record: JSONObject) -> [Int64] {
        modificationTimeStamp(of: record).map { [$0] } ?? []
    }

    public var checksGhostsByExistence: Bool { false }

    public func deletedSince(_ since: Int64, until: Int64) async throws -> DeletedSince? { nil }

    public func ghostCleaningServerTime() async throws -> Int64? { nil }

    public func existingIds(among ids: [String]) async throws -> [String] {
        throw SyncError(.invalidTarget, "this target tells ghosts by its remote ids, not by existence")
    }
}
