import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// The SQLite store that every participant shares: `D/store.sqlite` in WAL mode.
///
/// Readers in any process see every commit and are never blocked by the writer. Writes run in
/// `IMMEDIATE` transactions, bump the change sequence, and can be fenced by a lease epoch so a
/// process that lost the writer lease can never commit.
///
/// ```swift
/// let store = try SharedStore.open(directory: SharedDirectory(path: "/tmp/d"), logger: logger)
/// try store.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
/// let entry = try store.upsertUnleased(["Id": "001", "Name": "Acme"], into: "accounts", externalIdPath: "Id")
/// ```
public final class SharedStore: Sendable {
    /// The shared directory the store lives in.
    public let directory: SharedDirectory
    let pool: DatabasePool
    let logger: Logger
    let checkpoints: WALCheckpoints
    let writeGuard: WriteGuard
    /// Writes in flight in this process, through either form of `write`: a write under the lease
    /// runs on the caller's thread only when it is the only one.
    private let writesInFlight = Atomic<Int>(0)

    init(
        directory: SharedDirectory, pool: DatabasePool, checkpoints: WALCheckpoints, writeGuard: WriteGuard,
        logger: Logger
    ) {
        self.directory = directory
        self.pool = pool
        self.checkpoints = checkpoints
        self.writeGuard = writeGuard
        self.logger = logger
    }

    /// Storage-fault injection for this store (tests and chaos runs only).
    @_spi(Faults) public var faults: StorageFaults { writeGuard.faults }

    /// Opens the store in `directory`, creating and migrating it if needed.
    ///
    /// Opening and migrating happen under an exclusive `flock` on `D/setup.lock`, so processes
    /// that start together never race on the schema. The store file gets mode 0600.
    ///
    /// - Parameters:
    ///   - create: when false, a missing store is an error instead of being created.
    ///   - busyTimeout: how long a write waits for a lock held by another process before it
    ///     fails with "database is locked".
    /// - Throws: ``StoreError`` (`notADatabase` when the file is not SQLite, `schemaTooNew` when a
    ///   newer Baton wrote it, `storeFileChanged` when the store file is missing but its WAL is
    ///   still there, as when the store was moved or deleted while in use).
    public static func open(
        directory: SharedDirectory, create: Bool = true, busyTimeout: Duration = .seconds(10), logger: Logger
    ) throws -> SharedStore {
        let setupLock = try FileLock(path: directory.setupLockPath)
        try setupLock.lock()
        defer { setupLock.unlock() }

        let path = directory.storePath
        if !FileManager.default.fileExists(atPath: path),
            FileManager.default.fileExists(atPath: path + "-wal")
        {
            // A new store beside an old WAL would take the WAL's frames as its own (or reset it),
            // damaging the store it belongs to, wherever that was moved.
            throw StoreError(
                .storeFileChanged,
                "\(path) is missing but its write-ahead log \(path)-wal is still there: the store was moved or deleted while in use; put it back, or move \(path)-wal and \(path)-shm away to start a new store"
            )
        }
        if !create, !FileManager.default.fileExists(atPath: path) {
            throw StoreError(
                .directoryUnavailable,
                "no store in \(directory.path); start a participant there or pass the right --dir")
        }
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        do {
            let checkpoints = WALCheckpoints()
            let writeGuard = WriteGuard(busyTimeout: busyTimeout, path: path)
            var configuration = Configuration()
            configuration.busyMode = .callback(writeGuard.busyCallback())
            configuration.label = "baton.store"
            configuration.prepareDatabase { db in
                // Keep -wal and -shm in place so read-only openers never find them missing.
                var flag: CInt = 1
                let code = withUnsafeMutablePointer(to: &flag) {
                    sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, $0)
                }
                guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                checkpoints.install(on: db)
            }
            let pool = try DatabasePool(path: path, configuration: configuration)
            let migrator = StoreMigrations.migrator
            if try pool.read({ try migrator.hasBeenSuperseded($0) }) {
                throw StoreError(
                    .schemaTooNew,
                    "the store in \(directory.path) was written by a newer Baton; upgrade baton to open it")
            }
            try migrator.migrate(pool)
            writeGuard.identity.record()
            return SharedStore(
                directory: directory, pool: pool, checkpoints: checkpoints, writeGuard: writeGuard,
                logger: logger)
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "opening \(path)")
        }
    }

    // MARK: - Transactions

    /// Runs `body` in one `IMMEDIATE` write transaction and bumps the change sequence.
    ///
    /// - Parameters:
    ///   - access: `.lease(fence)` commits only while the fence's epoch is the store's (its
    ///     first write also records the holding); `.unleased` writes outside any lease;
    ///     `.none` fails with `staleEpoch` and writes nothing.
    ///   - deadline: when given, a wait for a lock held by another process ends there (the
    ///     store's busy timeout applies too).
    /// - Returns: the body's result.
    /// - Throws: ``StoreError``; the transaction rolled back whole.
    @discardableResult
    public func write<T>(
        _ access: WriteAccess, deadline: ContinuousClock.Instant? = nil,
        _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        writesInFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        defer { writesInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        return try writeHere(access, deadline: deadline, body)
    }

    /// The async form of ``write(_:deadline:_:)``: suspends instead of blocking while the
    /// write connection is busy.
    ///
    /// A write under the lease that is this process's only write in flight runs on the caller's
    /// thread: no other process writes while the lease is held, so it does not wait for SQLite's
    /// lock, and it saves two thread hops (to GRDB's writer queue and back), about a third of a
    /// small write's cost. Every other write runs on GRDB's writer queue: an unleased one may
    /// sleep in SQLite's busy handler for up to the busy timeout, and one behind another write of
    /// this process would block the caller's thread until that one ends.
    @discardableResult
    public func write<T: Sendable>(
        _ access: WriteAccess, deadline: ContinuousClock.Instant? = nil,
        _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        let others = writesInFlight.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue
        defer { writesInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        if others == 0, case .lease = access {
            return try writeHere(access, deadline: deadline, body)
        }
        do {
            return try await pool.writeWithoutTransaction { db in
                try self.immediate(db, access, deadline: deadline, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// One write transaction on the calling thread (GRDB runs it there when its writer queue
    /// is idle, and blocks until it is otherwise).
    private func writeHere<T>(
        _ access: WriteAccess, deadline: ContinuousClock.Instant?, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        do {
            return try pool.writeWithoutTransaction { db in
                try immediate(db, access, deadline: deadline, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// ``write(_:deadline:_:)`` outside any lease: for a store only this process writes, and
    /// for tools that mean it.
    @discardableResult
    public func writeUnleased<T>(
        deadline: ContinuousClock.Instant? = nil, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        try write(.unleased, deadline: deadline, body)
    }

    /// The async form of ``writeUnleased(deadline:_:)``.
    @discardableResult
    public func writeUnleased<T: Sendable>(
        deadline: ContinuousClock.Instant? = nil, _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        try await write(.unleased, deadline: deadline, body)
    }

    /// One IMMEDIATE transaction: refuse a store file that changed under us, admit the write
    /// (its fence), run the body, record the commit (unless it is the lease's own bookkeeping,
    /// which the lease history records), and let an injected fault fail the commit.
    func immediate<T>(
        _ db: Database, _ access: WriteAccess, deadline: ContinuousClock.Instant? = nil, logged: Bool = true,
        _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        if case .none = access {
            throw StoreError(.staleEpoch, "this process does not hold the writer lease; nothing was written")
        }
        if let problem = writeGuard.identity.problem() {
            throw StoreError(.storeFileChanged, "\(problem); nothing was written, and nothing will be")
        }
        writeGuard.beginWrite(deadline: deadline)
        let fault = try writeGuard.faults.beginWrite(db)
        let stop = logged && writeGuard.faults.takeStopRequest()
        var result: T?
        var began: ContinuousClock.Instant?
        var recorded: LeaseFence?
        var sequence: Int64?
        defer { if let began { writeGuard.noteTransaction(ContinuousClock.now - began) } }
        try db.inTransaction(.immediate) {
            began = ContinuousClock.now
            let transaction = StoreTransaction(db: db)
            if case .lease(let fence) = access, try fence.admit(transaction) { recorded = fence }
            result = try body(transaction)
            if case .lease(let fence) = access { try fence.confirm() }
            if logged { sequence = try transaction.recordCommit(fencedBy: access.epoch) }
            // Thread-directed, so this thread stops before it returns (a process-directed
            // SIGSTOP may be taken by another thread while this one commits).
            if stop { pthread_kill(pthread_self(), SIGSTOP) }
            if let fault { try writeGuard.faults.raise(fault) }
            return .commit
        }
        // Committed: only now is the holding in the store, and may readers be told.
        recorded?.markRecorded()
        if let sequence { ringChanges(sequence) }
        return result!
    }

    /// Writes `sequence` into `D/changes`, the doorbell readers in other processes watch with
    /// inotify (the close after writing is their event). In place, fixed width, one `pwrite`:
    /// no directory entry changes, so a commit costs no journaled rename (a rename per commit
    /// cut the throughput of small writes by more than half). Readers take the sequence from the
    /// store, never from the file. A failure is ignored: the commit stands, the next one rings.
    func ringChanges(_ sequence: Int64) {
        let fd = Glibc.open(directory.changesPath, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return }
        let digits = String(sequence)
        let text = Array((String(repeating: " ", count: max(0, 20 - digits.count)) + digits + "\n").utf8)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        Glibc.close(fd)
    }

    // MARK: - Lease bookkeeping

    /// Takes the writer lease over from a holder that stopped renewing it: in one `IMMEDIATE`
    /// transaction, checks that the store's epoch is still `expected`, records `epoch` (closing
    /// the interval of `expected` as `closing` says, or as taken over now), and runs `install`
    /// (which checks that the holder still looks the same and puts this process's lock file in
    /// place) before committing. Two takers serialize on the transaction, so at most one wins;
    /// the old holder's fenced writes fail from the commit on.
    ///
    /// - Parameter deadline: how long to wait for SQLite's write lock (a holder frozen inside a
    ///   write transaction keeps it: the caller gets `busy` and can say so).
    /// - Returns: when the lease was taken (ms since 1970), or nil when it moved meanwhile.
    public func takeOverLease(
        from expected: Int64, epoch: Int64, closing: LeaseClosing?, name: String, pid: Int32,
        deadline: ContinuousClock.Instant, install: () throws -> Void
    ) throws -> Int64? {
        do {
            return try pool.writeWithoutTransaction { db in
                try immediate(db, .unleased, deadline: deadline, logged: false) { transaction in
                    guard try transaction.leaseEpoch() == expected else { return nil }
                    let now = transaction.now
                    let closes =
                        closing?.epoch == expected
                        ? closing! : LeaseClosing(epoch: expected, at: now, kind: .takenOver)
                    let acquired = max(now, closes.at)
                    try transaction.recordLeaseEpoch(
                        epoch, name: name, pid: pid, acquired: acquired, closing: closes)
                    try install()
                    return acquired
                }
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "taking the writer lease over")
        }
    }

    /// The store's lease epoch, read on the write connection (not a reader): a process about to
    /// write under a lease it was just granted has that connection's page cache brought up to
    /// date once, where a reader's snapshot would be read once more by its first write.
    public func leaseEpochForWriting() throws -> Int64 {
        do {
            return try pool.writeWithoutTransaction { db in try StoreReader(db: db).leaseEpoch() }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading the lease epoch")
        }
    }

    /// Runs `body` on a read-only snapshot of the last commit. Never waits for a writer.
    public func read<T>(_ body: (StoreReader) throws -> T) throws -> T {
        do {
            return try pool.read { db in try body(StoreReader(db: db)) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading")
        }
    }

    /// The async form of ``read(_:)``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (StoreReader) throws -> T) async throws -> T {
        do {
            return try await pool.read { db in try body(StoreReader(db: db)) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading")
        }
    }

    /// Interrupts the statement in flight on any connection; its transaction rolls back and the
    /// caller gets a `StoreError` with code `interrupted`. Used when a stop passes its deadline.
    ///
    /// A write waiting for a lock held by another process is abandoned too (SQLite's interrupt
    /// does not reach a connection asleep in its busy handler): it fails with "database is
    /// locked". Until ``resumeWrites()``, later writes wait at most 200 ms for such a lock, so
    /// a stop and a release never hang on a store locked elsewhere, while a short hold still
    /// lets the stop's own bookkeeping land.
    public func interrupt() {
        writeGuard.abandonWrites()
        pool.interrupt()
    }

    /// Ends the effect of ``interrupt()`` on lock waits.
    public func resumeWrites() {
        writeGuard.resumeWrites()
    }

    /// The longest this process has held SQLite's write lock in one transaction: the window in
    /// which a frozen process blocks every writer.
    public var longestWriteTransaction: Duration { writeGuard.longestTransaction.withLock { $0 } }

    /// Why this process must no longer write to the store (its file was deleted, renamed or
    /// replaced), or nil when all is well.
    public func fileProblem() -> String? {
        writeGuard.identity.problem()
    }

    /// A passive WAL checkpoint: copies what it can without waiting for readers.
    public func checkpoint() throws {
        do {
            let result = try pool.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            checkpoints.checkpointed(
                walFrames: CInt(clamping: result.walFrameCount),
                copied: CInt(clamping: result.checkpointedFrameCount))
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "checkpointing")
        }
    }

    /// Holds this process's automatic WAL checkpoints back until ``releaseCheckpoints()``. The
    /// writer lease does this while held, so no process queued for it waits for a checkpoint.
    public func holdCheckpoints() {
        checkpoints.hold()
    }

    /// Ends a ``holdCheckpoints()`` and runs the checkpoint it held back, if one is due.
    public func releaseCheckpoints() {
        guard checkpoints.release() else { return }
        do {
            try checkpoint()
        } catch {
            // A passive checkpoint that finds the store busy is skipped and runs another time:
            // normal, not a failure.
            logger.debug("WAL checkpoint skipped", metadata: ["error": "\(error)"])
        }
    }

    /// Closes every connection. Further calls fail.
    public func close() throws {
        try pool.close()
    }
}

extension StoreError {
    static func from(_ error: DatabaseError, context: String) -> StoreError {
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return StoreError(
                .notADatabase,
                "\(context): the file is not a SQLite database; move it away or use another --dir")
        case .SQLITE_BUSY:
            return StoreError(
                .busy, "\(context): another process holds the store's write lock (database is locked)")
        case .SQLITE_INTERRUPT:
            return StoreError(.interrupted, "\(context): the statement was interrupted and rolled back")
        case .SQLITE_CORRUPT:
            return StoreError(
                .notADatabase, "\(context): the database file is corrupt; restore it from a backup")
        default:
            // The SQL is kept (it is diagnostic); arguments, which may hold record data, are not.
            let sql = error.sql.map { " (SQL: \($0))" } ?? ""
            return StoreError(
                .database,
                "\(context): SQLite error \(error.resultCode.rawValue): \(error.message ?? "unknown")\(sql)")
        }
    }
}
