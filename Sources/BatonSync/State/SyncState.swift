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

    public var mergeMode: MergeMode { options.mergeMode }

    /// What `baton syncs --json` shows of it.
    enum CodingKeys: String, CodingKey {
        case id, name, type, target, options, status, progress, totalSize, maxTimeStamp, startTime, endTime
        case error
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
        if type == .syncDown {
            try container.encode(position.modifiedSince ?? -1, forKey: .modifiedSince)
            try container.encodeIfPresent(position.run?.afterId, forKey: .resumeAfterId)
        }
    }

    /// - Throws: `unreadableSync` naming the row when its type or status is not one this
    ///   version knows (never read as something it is not).
    init(row: SyncStateRow) throws {
        func unreadable(_ what: String, _ value: String, _ known: [String]) -> SyncError {
            let label = row.name.map { "'\($0)' (#\(row.id))" } ?? "#\(row.id)"
            return SyncError(
                .unreadableSync,
                "sync \(label) in the store has an unknown \(what) '\(value.prefix(40))' (this version knows \(known.joined(separator: ", "))); it was written by another version or by hand"
            )
        }
        guard let type = SyncType(rawValue: row.type) else {
            throw unreadable("type", row.type, SyncType.allCases.map(\.rawValue))
        }
        guard let status = SyncStatus(rawValue: row.status) else {
            throw unreadable("status", row.status, SyncStatus.allCases.map(\.rawValue))
        }
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

    init(name: String?, type: SyncType, target: JSONObject, options: SyncOptions, soupName: String) {
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
            runServerTime: position.run.map { $0.serverTime ?? -1 }, resumeAfterId: position.run?.afterId)
    }

    /// The persisted syncs with `status`, in id order (Mobile Sync's `getSyncsWithStatus`).
    public static func getSyncsWithStatus(_ store: SharedStore, _ status: SyncStatus) throws -> [SyncState] {
        try store.read { try $0.syncStates(status: status.rawValue) }.map { try SyncState(row: $0) }
    }

    /// Every persisted sync, in id order.
    public static func all(_ store: SharedStore) throws -> [SyncState] {
        try store.read { try $0.syncStates() }.map { try SyncState(row: $0) }
    }

    /// The persisted sync with this id, or `nil`.
    public static func byId(_ id: Int64, store: SharedStore) throws -> SyncState? {
        try store.read { try $0.syncState(id: id) }.map { try SyncState(row: $0) }
    }

    /// The persisted sync with this name, or `nil`.
    public static func byName(_ name: String, store: SharedStore) throws -> SyncState? {
        try store.read { try $0.syncState(name: name) }.map { try SyncState(row: $0) }
    }
}
