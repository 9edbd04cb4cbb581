import BatonStore

/// A sync as persisted in the store: any process can read it and, holding the writer lease,
/// resume it. Every change of status or progress is written before listeners hear of it.
public struct SyncState: Sendable, Hashable, Encodable {
    public var id: Int64
    public var name: String?
    public var type: SyncType
    /// The target's description (what ``SyncTargetFactory`` rebuilds it from).
    public var target: JSONObject
    public var options: SyncOptions
    public var soupName: String
    public var status: SyncStatus
    /// Percent of the current run, 0–100.
    public var progress: Int
    /// Records the current run expects; -1 before it knows.
    public var totalSize: Int
    /// The newest modification time stamp saved, in ms since 1970; -1 when none (Mobile Sync's
    /// field; where a sync down's next run starts is ``position``).
    public var maxTimeStamp: Int64
    /// A sync down's position: where its next run fetches from, and where the run in progress
    /// resumes.
    public var position: SyncDownPosition
    /// Start and end of the last run, ms since 1970.
    public var startTime: Int64?
    public var endTime: Int64?
    /// Why the last run failed, if it did.
    public var error: String?
    /// A sync up's records the server refused in its last run (or in the run so far): each
    /// stays dirty with the server's answer in `__last_error__`. The run still ends `done`, as
    /// Mobile Sync's does; this count is how an app tells that something did not go up.
    public var refusedCount: Int = 0
    /// A sync down's clean resync ghosts: where its next window of the server's deletions starts
    /// (server ms since 1970), and when its last full comparison of ids ran; nil until a clean
    /// has set them (its next clean then compares every id).
    public var ghostsCoveredUntil: Int64?
    public var ghostsFullAt: Int64?

    public var mergeMode: MergeMode { options.mergeMode }

    /// The soups the sync writes: its own, and a parent-children target's children's (Mobile
    /// Sync's `childrenInfo`, `children` in Baton's sync up description).
    public var soups: Set<String> {
        var soups: Set<String> = [soupName]
        for key in ["childrenInfo", "children"] {
            if let soup = target[key]?.objectValue?["soupName"]?.stringValue { soups.insert(soup) }
        }
        return soups
    }

    /// What `baton syncs --json` shows of it.
    enum CodingKeys: String, CodingKey {
        case id, name, type, target, options, status, progress, totalSize, maxTimeStamp, startTime, endTime
        case error, refusedCount, ghostsCoveredUntil, ghostsFullAt
        case soupName = "soup"
        case modifiedSince, resumeAfterId
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(target, forKey: .target)
        try container.encode(options, forKey: .options)
        try container.encode(soupName, forKey: .soupName)
        try container.encode(status, forKey: .status)
        try container.encode(progress, forKey: .progress)
        try container.encode(totalSize, forKey: .totalSize)
        try container.encode(maxTimeStamp, forKey: .maxTimeStamp)
        try container.encodeIfPresent(startTime, forKey: .startTime)
        try container.encodeIfPresent(endTime, forKey: .endTime)
        try container.encodeIfPresent(error, forKey: .error)
        if type == .syncUp { try container.encode(refusedCount, forKey: .refusedCount) }
        if type == .syncDown {
            try container.encode(position.modifiedSince ?? -1, forKey: .modifiedSince)
            try container.encodeIfPresent(position.run?.afterId, forKey: .resumeAfterId)
            try container.encodeIfPresent(ghostsCoveredUntil, forKey: .ghostsCoveredUntil)
            try container.encodeIfPresent(ghostsFullAt, forKey: .ghostsFullAt)
        }
    }

    /// A stored row.
    ///
    /// - Throws: `unreadableSync` naming it when its type or status is not one this version
    ///   knows.
    init(row: SyncStateRow) throws {
        self = try StoredSync(.success(row)).get()
    }

    /// A row whose type and status this version knows (``StoredSync`` checks them: a row is
    /// never read as something it is not).
    init(row: SyncStateRow, type: SyncType, status: SyncStatus) {
        id = row.id
        name = row.name
        self.type = type
        target = row.target
        options = SyncOptions(json: row.options)
        soupName = row.soupName
        self.status = status
        progress = row.progress
        totalSize = row.totalSize
        maxTimeStamp = row.maxTimeStamp
        startTime = row.startTime
        endTime = row.endTime
        error = row.error
        refusedCount = row.refusedCount
        ghostsCoveredUntil = row.ghostsCoveredUntil
        ghostsFullAt = row.ghostsFullAt
        position = Self.position(of: row)
    }

    /// The row's position. A row written before positions existed may hide edits its earlier
    /// runs' `>` missed, at any stamp: its next run asks for every record stamped since 1970
    /// (each one once), merged as the incremental run it is (a local change whose server copy
    /// has not moved stays), with no run in progress.
    static func position(of row: SyncStateRow) -> SyncDownPosition {
        guard let since = row.modifiedSince else {
            return SyncDownPosition(modifiedSince: row.maxTimeStamp >= 0 ? 0 : nil)
        }
        let run = row.runServerTime.map {
            SyncDownPosition.Run(serverTime: $0 < 0 ? nil : $0, afterId: row.resumeAfterId)
        }
        return SyncDownPosition(modifiedSince: since < 0 ? nil : since, run: run)
    }

    package init(name: String?, type: SyncType, target: JSONObject, options: SyncOptions, soupName: String) {
        id = 0
        self.name = name
        self.type = type
        self.target = target
        self.options = options
        self.soupName = soupName
        status = .new
        progress = 0
        totalSize = -1
        maxTimeStamp = -1
        position = SyncDownPosition()
    }

    var row: SyncStateRow {
        SyncStateRow(
            id: id, name: name, type: type.rawValue, target: target, options: options.json,
            soupName: soupName,
            status: status.rawValue, progress: progress, totalSize: totalSize, maxTimeStamp: maxTimeStamp,
            startTime: startTime, endTime: endTime, error: error, modifiedSince: position.modifiedSince ?? -1,
            runServerTime: position.run.map { $0.serverTime ?? -1 }, resumeAfterId: position.run?.afterId,
            refusedCount: refusedCount, ghostsCoveredUntil: ghostsCoveredUntil, ghostsFullAt: ghostsFullAt)
    }

    /// The persisted syncs with `status`, in id order (Mobile Sync's `getSyncsWithStatus`).
    ///
    /// - Throws: `unreadableSync` naming the first sync this version cannot read (one whose row
    ///   holds what it cannot take, or an unknown type or status); ``StoredSync/all(_:status:)``
    ///   lists every sync, such ones included.
    public static func getSyncsWithStatus(_ store: SharedStore, _ status: SyncStatus) throws -> [SyncState] {
        try StoredSync.all(store, status: status).map { try $0.get() }
    }

    /// Every persisted sync, in id order.
    ///
    /// - Throws: as ``getSyncsWithStatus(_:_:)``.
    public static func all(_ store: SharedStore) throws -> [SyncState] {
        try StoredSync.all(store).map { try $0.get() }
    }

    /// The persisted sync with this id, or `nil`.
    ///
    /// - Throws: `unreadableSync` naming it when this version cannot read it.
    public static func byId(_ id: Int64, store: SharedStore) throws -> SyncState? {
        try StoredSync.byId(id, store: store)?.get()
    }

    /// The persisted sync with this name, or `nil`.
    ///
    /// - Throws: `unreadableSync` naming it when this version cannot read it.
    public static func byName(_ name: String, store: SharedStore) throws -> SyncState? {
        try StoredSync.byName(name, store: store)?.get()
    }
}
