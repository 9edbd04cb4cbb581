import BatonStore

/// Why the sync manager refused or ended a call. Says what to do next; never record contents.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The manager is stopping or stopped (or this process is not the writer).
        case notAcceptingSyncs = "not_accepting_syncs"
        /// reSync of a sync that is running.
        case alreadyRunning = "already_running"
        case unknownSync = "unknown_sync"
        /// The call does not apply to this sync's type.
        case wrongSyncType = "wrong_sync_type"
        /// Clean resync ghosts saw a stop and deleted nothing.
        case ghostCleaningStopped = "ghost_cleaning_stopped"
        /// The target's description cannot be used.
        case invalidTarget = "invalid_target"
        /// restart while syncs are still running.
        case notStopped = "not_stopped"
        /// A stored sync that cannot be read or run: a column that does not hold what it should
        /// (options or a target that are not a JSON object), a type, status or target this
        /// version does not know, or a read of it that failed. The writer sets it aside
        /// (`failed`, with this error) and runs the others.
        case unreadableSync = "unreadable_sync"
        /// A sync run on a caller's behalf (a metadata or layout fetch) did not end `done`.
        case syncFailed = "sync_failed"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
