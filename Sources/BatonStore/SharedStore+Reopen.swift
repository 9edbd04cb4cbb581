import Foundation
import GRDB

/// Going on after one of the store's files was deleted, renamed or replaced under this process.
extension SharedStore {
    /// What ``reopen()`` did.
    public enum Reopening: Sendable, Hashable {
        /// The store's files are the ones this process opened: nothing to do.
        case unchanged
        /// The files at the paths are used from now on, in place of the ones that changed.
        case reopened(StoreFileProblem)
    }

    /// After a ``fileCheck()`` problem, uses what the path holds now, when it is a store this
    /// process can open and verify: a copy put in place of the store, or the store itself with a
    /// write-ahead log or index that was deleted or replaced.
    ///
    /// First it copies every commit of the write-ahead log it has open into the store file that
    /// log belongs to (a checkpoint through the connections it has), so a commit made into a
    /// deleted log is not lost, and a log that went with the old store is never applied to
    /// another one. It skips that when another file is at the log's path: another process's
    /// reopen made it, after copying everything back. Then it closes its connections, removes
    /// the log and index it had open from their paths (when they are still there), and opens
    /// the store at the path afresh (SQLite makes a new log and index), checked with
    /// `PRAGMA quick_check` and migrated when older, under `D/setup.lock` as at open (waiting
    /// for it at most ``defaultSetupTimeout``).
    ///
    /// Call it only while this process holds no lease (a lease's fence is checked against the
    /// store it was minted for, and a copy may hold another epoch), and with this handle the
    /// process's only one on the store: SQLite shares a store's index among the connections of
    /// a process, so a second handle still on the old files would share it with the new ones.
    ///
    /// - Returns: `.unchanged` when the files are the ones opened, else what was replaced.
    /// - Throws: ``StoreError`` with code `storeFileChanged` while no store is at the path, or
    ///   the file there is not a store that passes its check (the message names it); `busy` while
    ///   another process's reads keep the old log from being copied back, or another process
    ///   holds `D/setup.lock` (the message names it; try again later).
    ///   Until a reopen succeeds, writes stay refused.
    public func reopen() throws -> Reopening {
        let identity = writeGuard.identity
        guard let problem = identity.problem() else { return .unchanged }
        let path = directory.storePath
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(
                .storeFileChanged, "\(problem); no store is at \(path): put it back (or a copy of it)")
        }
        let setupLock = try FileLock(path: directory.setupLockPath, in: directory)
        try setupLock.lock(timeout: Self.defaultSetupTimeout)
        defer { setupLock.unlock() }
        try Self.refuseLinkedStoreFiles(path)
        if current.withLock({ !$0.closed }) {
            if identity.problem(of: .writeAheadLog)?.change != .replaced { try copyBackOpenedLog(problem) }
            // The old connections go first: SQLite keeps one index per store file and process, and
            // new connections would share the old one while any old connection is open.
            do {
                try pool.close()
            } catch let error as DatabaseError {
                throw StoreError(
                    .busy,
                    "\(problem); this process's connections to the old files cannot be closed yet (\(StoreError.from(error, context: "closing").message)); trying again"
                )
            }
            current.withLock { $0.closed = true }
        }
        // The log and index this process had open go with the old files (and hold nothing that
        // was not copied back): a new store must not take their frames, and SQLite makes fresh
        // ones. Files put there by another process's reopen are that store's own and stay.
        for file in [StoreFileProblem.File.writeAheadLog, .sharedIndex] where identity.isAsOpened(file) {
            unlink(identity.path(of: file))
        }
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        let fresh: DatabasePool
        do {
            fresh = try Self.openPool(directory: directory, writeGuard: writeGuard, checkpoints: checkpoints)
            let check = try fresh.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check") }
            guard check == "ok" else {
                // The failed check is the error to report; the pool is discarded either way.
                try? fresh.close()
                throw StoreError(
                    .storeFileChanged,
                    "\(problem); the file now at \(path) fails its check (\(check ?? "no answer"))")
            }
        } catch let error as DatabaseError {
            throw StoreError(
                .storeFileChanged,
                "\(problem); the file now at \(path) cannot be opened as a store (\(StoreError.from(error, context: "opening").message))"
            )
        } catch let error as StoreError where error.code != .storeFileChanged {
            throw StoreError(
                .storeFileChanged, "\(problem); the file now at \(path) cannot be used: \(error.message)")
        }
        current.withLock { $0 = Connections(pool: fresh) }
        logger.notice("reopened the store", metadata: ["baton.reason": "\(problem)"])
        return .reopened(problem)
    }

    /// Copies every commit of the write-ahead log this process has open into the store file it
    /// belongs to. Nothing to do when the log's commits are all copied back already.
    func copyBackOpenedLog(_ problem: StoreFileProblem) throws {
        let result: (walFrameCount: Int, checkpointedFrameCount: Int)
        do {
            result = try connections().writeWithoutTransaction { db in try db.checkpoint(.passive) }
        } catch let error as DatabaseError {
            throw StoreError(
                .busy,
                "\(problem); the commits in the write-ahead log this process has open cannot be copied back yet (\(StoreError.from(error, context: "checkpointing").message)); trying again"
            )
        }
        guard result.walFrameCount == result.checkpointedFrameCount else {
            throw StoreError(
                .busy,
                "\(problem); \(result.walFrameCount - result.checkpointedFrameCount) commits of the write-ahead log this process has open wait for readers before they can be copied back; trying again"
            )
        }
    }

    /// A checkpoint that copies every commit of the write-ahead log into the store file, waiting
    /// for readers (SQLite's `FULL`) until `deadline`: what a writer that lost one of the store's
    /// files does before it lets the lease go, so that nothing it committed stays only in a log
    /// nobody else can see.
    ///
    /// - Returns: whether every commit was copied back.
    @discardableResult
    public func checkpointCompletely(deadline: ContinuousClock.Instant) -> Bool {
        writeGuard.beginWrite(deadline: deadline)
        // A checkpoint that fails (busy past the deadline, store gone) is reported as `false`.
        let result = try? connections().writeWithoutTransaction { db in try db.checkpoint(.full) }
        guard let result else { return false }
        return result.walFrameCount == result.checkpointedFrameCount
    }
}
