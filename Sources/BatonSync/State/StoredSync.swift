import BatonStore

/// A sync as the store holds it: one this version can run, or one it cannot
/// (``UnreadableSync``). What listings read (`baton syncs`, `baton status`, a restart), so one bad
/// row hides no other.
public enum StoredSync: Sendable, Hashable {
    /// A sync this version can run.
    case readable(SyncState)
    /// A sync this version cannot run: what could be read of it, and what is wrong.
    case unreadable(UnreadableSync)

    /// The store-assigned id.
    public var id: Int64 {
        switch self {
        case .readable(let state): state.id
        case .unreadable(let sync): sync.id
        }
    }

    /// The sync's name.
    public var name: String? {
        switch self {
        case .readable(let state): state.name
        case .unreadable(let sync): sync.name
        }
    }

    /// The sync's state.
    ///
    /// - Throws: ``UnreadableSync/cause`` for one this version cannot run.
    public func get() throws -> SyncState {
        switch self {
        case .readable(let state): return state
        case .unreadable(let sync): throw sync.cause
        }
    }

    /// Reads a stored row: its type and status must be ones this version knows (a row is never
    /// read as something it is not).
    init(_ entry: Result<SyncStateRow, UnreadableSyncRow>) {
        func unknown(_ what: String, _ value: String, _ known: [String]) -> String {
            "has an unknown \(what) '\(value.prefix(40))' (this version knows \(known.joined(separator: ", ")))"
        }
        switch entry {
        case .failure(let row):
            self = .unreadable(UnreadableSync(row))
        case .success(let row):
            guard let type = SyncType(rawValue: row.type) else {
                self = .unreadable(
                    UnreadableSync(row, problem: unknown("type", row.type, SyncType.allCases.map(\.rawValue)))
                )
                return
            }
            guard let status = SyncStatus(rawValue: row.status) else {
                self = .unreadable(
                    UnreadableSync(
                        row, problem: unknown("status", row.status, SyncStatus.allCases.map(\.rawValue))))
                return
            }
            self = .readable(SyncState(row: row, type: type, status: status))
        }
    }

    /// Every stored sync (only those with `status`, when given), in id order.
    ///
    /// - Throws: `StoreError` only when the store cannot be read.
    public static func all(_ store: SharedStore, status: SyncStatus? = nil) throws -> [StoredSync] {
        try store.read { try all(in: $0, status: status) }
    }

    /// ``all(_:status:)`` within a read the caller holds (one snapshot with other reads).
    public static func all(in reader: StoreReader, status: SyncStatus? = nil) throws -> [StoredSync] {
        try reader.syncStateEntries(status: status?.rawValue).map(StoredSync.init)
    }

    /// The stored sync with this id, or `nil`.
    ///
    /// - Throws: `StoreError` only when the store cannot be read.
    public static func byId(_ id: Int64, store: SharedStore) throws -> StoredSync? {
        try store.read { try $0.syncStateEntry(id: id) }.map(StoredSync.init)
    }

    /// The stored sync with this name, or `nil`.
    ///
    /// - Throws: `StoreError` only when the store cannot be read.
    public static func byName(_ name: String, store: SharedStore) throws -> StoredSync? {
        try store.read { try $0.syncStateEntry(name: name) }.map(StoredSync.init)
    }
}
