import GRDB
import GRDBSQLite
import Synchronization

/// When this process copies the WAL back into the database file.
///
/// SQLite's own rule checkpoints in whichever commit brings the WAL to 1,000 frames, inside that
/// commit's call. A lease holder doing so would make every process queued for the lease wait
/// for the copy and its fsync. So while this process holds the writer lease its checkpoints
/// wait (up to ``limitWhileHeld`` frames, so a long-held lease does not grow the WAL without
/// bound) and run right after the release, when nobody waits for them; without the lease they
/// run as SQLite's would.
final class WALCheckpoints: Sendable {
    /// Frames at which a commit checkpoints, as SQLite's default.
    static let threshold: CInt = 1000
    /// Frames past which a commit checkpoints even while the lease is held.
    static let limitWhileHeld: CInt = 8 * threshold

    private let state = Mutex<(holds: Int, frames: CInt)>((0, 0))

    /// Installs the rule on a connection, in place of SQLite's automatic checkpoint.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, Self.hook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called by SQLite after each commit with the frames now in the WAL. The store keeps this
    /// object alive for as long as its connections.
    private static let hook:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, CInt) -> CInt = {
            context, connection, name, frames in
            guard let context else { return SQLITE_OK }
            let checkpoints = Unmanaged<WALCheckpoints>.fromOpaque(context).takeUnretainedValue()
            if checkpoints.committed(frames: frames) {
                // Passive: copies what it can without waiting; a checkpoint running elsewhere
                // (SQLITE_BUSY) is doing the same work.
                _ = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            return SQLITE_OK
        }

    /// Records the WAL's size after a commit; true when that commit should checkpoint now.
    private func committed(frames: CInt) -> Bool {
        state.withLock { state in
            state.frames = frames
            return frames >= (state.holds > 0 ? Self.limitWhileHeld : Self.threshold)
        }
    }

    /// Holds checkpoints back until the matching ``release()``.
    func hold() {
        state.withLock { $0.holds += 1 }
    }

    /// Ends one ``hold()``; true when none is left and the WAL is due a checkpoint.
    func release() -> Bool {
        state.withLock { state in
            state.holds = max(0, state.holds - 1)
            return state.holds == 0 && state.frames >= Self.threshold
        }
    }

    /// Forgets the size seen, after a checkpoint.
    func checkpointed() {
        state.withLock { $0.frames = 0 }
    }
}
