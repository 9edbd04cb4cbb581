import BatonLocking
import GRDB
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// When this process copies the WAL back into the database file.
///
/// SQLite's own rule checkpoints in whichever commit brings the WAL to 1,000 frames, inside that
/// commit's call. A lease holder doing so would make every process queued for the lease wait
/// for the copy and its fsync. So while this process holds the writer lease its checkpoints
/// wait (up to ``limitWhileHeld`` frames, so a long-held lease does not grow the WAL without
/// bound) and run right after the release, when nobody waits for them; without the lease they
/// run as SQLite's would.
///
/// A release checkpoints only when ``threshold`` frames were added since the WAL was last
/// copied back, by any process: the wal-index (the `-shm` file) says how many frames the WAL has
/// and how many of them are in the database already. Counted by this process alone, each of N
/// processes taking turns would checkpoint every ``threshold`` frames, N times too often. The WAL's size alone is no measure: a checkpoint after the
/// release runs while the next holder writes, so it rarely finishes the WAL, and the WAL starts
/// over only when a writer finds it finished. Under contention it then stays above the threshold
/// until the held limit, and a release that went by its size ran a checkpoint (two fsyncs) every
/// turn of the lease.
final class WALCheckpoints: Sendable {
    /// Frames at which a commit checkpoints, as SQLite's default.
    static let threshold: CInt = 1000
    /// Frames past which a commit checkpoints even while the lease is held.
    static let limitWhileHeld: CInt = 8 * threshold

    private struct State {
        var holds = 0
        /// Frames in the WAL after this process's last commit.
        var frames: CInt = 0
        /// Frames copied back into the database by this process's last checkpoint (0 once the
        /// WAL started over).
        var backfilled: CInt = 0
        /// The next release that leaves none held checkpoints whatever was added (a stop's).
        var wantedAtRelease = false
    }

    private let state = Locked(State())
    /// The wal-index's path (nil: this process's own count is used).
    private let shmPath: String?
    /// The wal-index, read for what every process has added and copied back: opened at the first
    /// release that needs it (a new store has none until its first write); -1 until then.
    private let shm = Locked<Int32>(-1)

    /// - Parameter shmPath: the store's wal-index; nil counts this process's commits alone.
    init(shmPath: String? = nil) {
        self.shmPath = shmPath
    }

    deinit {
        let fd = shm.withLock { $0 }
        if fd >= 0 { close(fd) }
    }

    /// The WAL's frames and those copied back into the database, from the wal-index header's
    /// `mxFrame` (offset 16) and its checkpoint information's `nBackfill` (offset 96), in the
    /// machine's byte order (sqlite.org/walformat.html); nil when it cannot be read.
    private func sharedFrames() -> (frames: UInt32, backfilled: UInt32)? {
        guard let shmPath else { return nil }
        let fd = shm.withLock { fd in
            if fd < 0 { fd = open(shmPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
            return fd
        }
        guard fd >= 0 else { return nil }
        var header = [UInt8](repeating: 0, count: 100)
        guard pread(fd, &header, header.count, 0) == header.count else { return nil }
        return header.withUnsafeBytes { raw in
            (
                raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self),
                raw.loadUnaligned(fromByteOffset: 96, as: UInt32.self)
            )
        }
    }

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
                var walFrames: CInt = -1
                var copied: CInt = -1
                let code = sqlite3_wal_checkpoint_v2(
                    connection, name, SQLITE_CHECKPOINT_PASSIVE, &walFrames, &copied)
                if code == SQLITE_OK { checkpoints.checkpointed(walFrames: walFrames, copied: copied) }
            }
            return SQLITE_OK
        }

    /// Records the WAL's size after a commit; true when that commit should checkpoint now.
    func committed(frames: CInt) -> Bool {
        state.withLock { state in
            // Fewer frames than were copied back: the WAL started over since.
            if frames < state.backfilled { state.backfilled = 0 }
            state.frames = frames
            return frames >= (state.holds > 0 ? Self.limitWhileHeld : Self.threshold)
        }
    }

    /// Holds checkpoints back until the matching ``release()``.
    func hold() {
        state.withLock { $0.holds += 1 }
    }

    /// Whether checkpoints are held now.
    var isHeld: Bool { state.withLock { $0.holds > 0 } }

    /// Makes the next ``release()`` that leaves none held checkpoint as soon as a single frame
    /// is not copied back yet; false when nothing is held now (nothing will be released).
    func checkpointAtRelease() -> Bool {
        state.withLock { state in
            guard state.holds > 0 else { return false }
            state.wantedAtRelease = true
            return true
        }
    }

    /// Ends one ``hold()``; true when none is left and ``threshold`` frames were added to the
    /// WAL since it was last copied back (one frame, after ``checkpointAtRelease()``).
    func release() -> Bool {
        let least = state.withLock { state -> CInt? in
            state.holds = max(0, state.holds - 1)
            guard state.holds == 0 else { return nil }
            defer { state.wantedAtRelease = false }
            let least = state.wantedAtRelease ? 1 : Self.threshold
            return state.frames - state.backfilled >= least ? least : nil
        }
        guard let least else { return false }
        guard let shared = sharedFrames() else { return true }
        // Copied back by another process meanwhile, or the WAL started over.
        return shared.frames >= shared.backfilled && shared.frames - shared.backfilled >= UInt32(least)
    }

    /// Records a checkpoint's outcome: the WAL's frames, and how many of them are now in the
    /// database file (SQLite's `pnLog` and `pnCkpt`; -1 when it did not say).
    func checkpointed(walFrames: CInt, copied: CInt) {
        guard walFrames >= 0, copied >= 0 else { return }
        state.withLock { state in
            state.frames = walFrames
            state.backfilled = copied
        }
    }
}
