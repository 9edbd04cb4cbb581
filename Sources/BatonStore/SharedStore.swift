import BatonLocking
import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// The SQLite store that every participant shares: `D/store.sqlite` in WAL mode.
///
/// Readers in any process see every commit and are never blocked by the writer. Writes run in
/// `IMMEDIATE` transactions, bump the change sequence, and are fenced by the writer lease: the
/// only write this type offers takes a ``LeaseFence``, which only the lease mints, so a process
/// that does not hold the lease, or lost it, can never commit. (A tool that means to write
/// outside the lease opens an ``UnfencedStore`` instead.)
///
/// ```swift
/// let store = try SharedStore.open(directory: SharedDirectory(path: "/tmp/d"), logger: logger)
/// let lease = try WriterLease(directory: shared, store: store, name: "host")
/// try await lease.withLease(timeout: .seconds(5)) { held in
///     try await store.write(held.fence) { transaction in
///         try transaction.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
///         try transaction.upsert(["Id": "001", "Name": "Acme"], into: "accounts", externalIdPath: "Id")
///     }
/// }
/// let accounts = try store.query(.all, in: "accounts")
/// ```
public final class SharedStore: Sendable {
    /// The shared directory the store lives in.
    public let directory: SharedDirectory
    /// The connections to the store file now in use: replaced by ``reopen()`` when another store
    /// was put in place of the one opened, and closed meanwhile.
    let current: Locked<Connections>
    /// The connections, open or closed (to interrupt or close them).
    var pool: DatabasePool { current.withLock { $0.pool } }

    struct Connections {
        var pool: DatabasePool
        /// A reopen closed them and found no store to open in their place yet.
        var closed = false
    }

    /// The connections to use, or why there are none: a reopen closed them and found no store
    /// at the path to open yet (SQLite must never be called on a closed connection).
    func connections() throws -> DatabasePool {
        let (pool, closed) = current.withLock { ($0.pool, $0.closed) }
        guard !closed else {
            let problem = writeGuard.identity.problem()?.description ?? "the store's files changed"
            throw StoreError(
                .storeFileChanged, "\(problem); no store is open until one is back at \(directory.storePath)")
        }
        return pool
    }
    let logger: Logger
    let checkpoints: WALCheckpoints
    let writeGuard: WriteGuard
    /// Test hooks (storage faults, a stop inside a transaction), given at open by tests, chaos
    /// and `--storage-fault-file` only. Nil in production: the write path then makes no hook call.
    package let faults: StorageFaults?
    /// Writes in flight in this process: a write under the lease runs on the caller's thread only
    /// when it is the only one.
    private let writesInFlight = Atomic<Int>(0)
    /// A lower bound of the lease history's oldest epoch, as this handle's committed fold checks
    /// saw it (0 until one ran): recording a holding then checks the history's size without a
    /// query while the span of epochs is below the limit.
    private let knownOldestEpoch = Atomic<Int64>(0)

    init(
        directory: SharedDirectory, pool: DatabasePool, checkpoints: WALCheckpoints, writeGuard: WriteGuard,
        faults: StorageFaults?, logger: Logger
    ) {
        self.directory = directory
        current = Locked(Connections(pool: pool))
        self.checkpoints = checkpoints
        self.writeGuard = writeGuard
        self.faults = faults
        self.logger = logger
    }

    /// Opens the store in `directory`, creating and migrating it if needed.
    ///
    /// Opening and migrating happen under an exclusive `flock` on `D/setup.lock`, so processes
    /// that start together never race on the schema. The store file gets mode 0600. Opening a
    /// store that is up to date writes nothing; a new or older one is created or migrated here,
    /// outside the lease (see the README's "Who may write").
    ///
    /// - Parameters:
    ///   - directory: the shared directory whose `store.sqlite` to open.
    ///   - create: when false, a missing store is an error instead of being created.
    ///   - busyTimeout: how long a write waits for a lock held by another process before it
    ///     fails with "database is locked".
    ///   - setupTimeout: how long to wait for `D/setup.lock` while another process holds it.
    ///   - logger: where the store logs (at debug level, and warnings it recovers from).
    /// - Throws: ``StoreError`` (`notADatabase` when the file is not SQLite, `schemaTooNew` when a
    ///   newer Baton wrote it, `storeFileChanged` when the store file is missing but its WAL is
    ///   still there, as when the store was moved or deleted while in use, `busy` when another
    ///   process held `D/setup.lock` past `setupTimeout`: the message names it).
    public static func open(
        directory: SharedDirectory, create: Bool = true, busyTimeout: Duration = .seconds(10),
        setupTimeout: Duration = defaultSetupTimeout, logger: Logger
    ) throws -> SharedStore {
        try open(
            directory: directory, create: create, busyTimeout: busyTimeout, setupTimeout: setupTimeout,
            faults: nil, logger: logger)
    }

    /// How long opening (or reopening) the store waits for `D/setup.lock` unless told otherwise:
    /// the lock is held for the few milliseconds an open or a migration takes.
    public static let defaultSetupTimeout = Duration.seconds(10)

    /// Opens the store in `directory` to read it only: nothing is created, migrated or committed
    /// (not even the empty transaction GRDB makes to give a new log a frame), and a write
    /// through the handle fails. What `baton status`, `syncs`, `store info`, `store query`,
    /// `lease check`, `lease history`, `watch` and `wait` use.
    ///
    /// - Throws: as ``open(directory:create:busyTimeout:setupTimeout:logger:)`` for a missing
    ///   store or a `setup.lock` held past `setupTimeout`, and ``StoreError`` `schemaTooOld` when
    ///   an older Baton wrote it (a participant or `baton store init` upgrades it).
    public static func openForReading(
        directory: SharedDirectory, setupTimeout: Duration = defaultSetupTimeout, logger: Logger
    ) throws -> SharedStore {
        try open(
            directory: directory, create: false, readOnly: true, setupTimeout: setupTimeout, faults: nil,
            logger: logger)
    }

    /// ``open(directory:create:busyTimeout:setupTimeout:logger:)`` with test hooks (tests, chaos
    /// runs and `baton participant --storage-fault-file` only), or read-only.
    package static func open(
        directory: SharedDirectory, create: Bool = true, readOnly: Bool = false,
        busyTimeout: Duration = .seconds(10), setupTimeout: Duration = defaultSetupTimeout,
        faults: StorageFaults?, logger: Logger
    ) throws -> SharedStore {
        let path = directory.storePath
        /// Refuses a missing store beside an orphaned WAL, and (`create` false) a missing store.
        func refuseMissingStore() throws {
            guard !FileManager.default.fileExists(atPath: path) else { return }
            if FileManager.default.fileExists(atPath: path + "-wal") {
                // A new store beside an old WAL would take the WAL's frames as its own (or reset
                // it), damaging the store it belongs to, wherever that was moved.
                throw StoreError(
                    .storeFileChanged,
                    "\(path) is missing but its write-ahead log \(path)-wal is still there: the store was moved or deleted while in use; put it back, or move \(path)-wal and \(path)-shm away to start a new store"
                )
            }
            if !create {
                throw StoreError(
                    .directoryUnavailable,
                    "no store in \(directory.path); start a participant there or pass the right --dir")
            }
        }
        // Before setup.lock too: a reader of a directory with no store creates nothing there.
        try refuseLinkedStoreFiles(path)
        try refuseMissingStore()
        let setupLock = try FileLock(path: directory.setupLockPath, in: directory)
        try setupLock.lock(timeout: setupTimeout)
        defer { setupLock.unlock() }
        try refuseLinkedStoreFiles(path)
        try refuseMissingStore()
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        do {
            let checkpoints = WALCheckpoints(shmPath: path + "-shm")
            let writeGuard = WriteGuard(busyTimeout: busyTimeout, path: path)
            let pool = try openPool(
                directory: directory, writeGuard: writeGuard, checkpoints: checkpoints, readOnly: readOnly)
            return SharedStore(
                directory: directory, pool: pool, checkpoints: checkpoints, writeGuard: writeGuard,
                faults: faults, logger: logger)
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "opening \(path)")
        }
    }

    /// Refuses store files that are symbolic links (or not regular files): SQLite follows a link
    /// at the store file itself, so one there would have Baton open, create or write another file.
    /// (SQLite opens the log, its index and a journal with `O_NOFOLLOW` itself; they are checked
    /// here too, to name them.) GRDB takes no open flags, so `SQLITE_OPEN_NOFOLLOW` cannot be
    /// passed: every connection checks instead, once open, that it opened `D/store.sqlite` itself
    /// (``openPool(directory:writeGuard:checkpoints:)``).
    static func refuseLinkedStoreFiles(_ path: String) throws {
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
            var info = stat()
            guard lstat(file, &info) == 0 else { continue }
            let type = info.st_mode & S_IFMT
            guard type == S_IFREG else {
                throw StoreError(
                    .unsafeDirectory,
                    type == S_IFLNK
                        ? SharedDirectory.describeOpenFailure(file, errno: ELOOP)
                        : "\(file) is not a regular file; remove it")
            }
        }
    }

    /// Connections to the store file at the path (migrated when older), with the store's files
    /// recorded as opened. Call under `setup.lock`.
    static func openPool(
        directory: SharedDirectory, writeGuard: WriteGuard, checkpoints: WALCheckpoints,
        readOnly: Bool = false
    ) throws -> DatabasePool {
        let expected = directory.resolvedStorePath
        var configuration = Configuration()
        // Read-only connections, and no journal-mode setup: GRDB's would commit a transaction
        // whenever the log is empty.
        configuration.readonly = readOnly
        configuration.busyMode = .callback(writeGuard.busyCallback())
        configuration.label = "baton.store"
        configuration.prepareDatabase { db in
            // SQLite resolves links in the name it opens: another name means a link was put at
            // the store file after the check before opening (nothing is written through it).
            let opened = sqlite3_db_filename(db.sqliteConnection, "main").map { String(cString: $0) }
            guard opened == expected else {
                throw StoreError(
                    .unsafeDirectory,
                    SharedDirectory.describeOpenFailure(directory.storePath, errno: ELOOP)
                        + " (SQLite opened \(opened ?? "no file"))")
            }
            // Keep -wal and -shm in place so read-only openers never find them missing.
            var flag: CInt = 1
            let code = withUnsafeMutablePointer(to: &flag) {
                sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, $0)
            }
            guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try WriteGuards.register(on: db)
            checkpoints.install(on: db)
        }
        let pool = try DatabasePool(path: directory.storePath, configuration: configuration)
        try StoreMigrations.migrateIfNeeded(pool, directory: directory, readOnly: readOnly)
        // A read has SQLite open the write-ahead log and its index, so all three are recorded.
        try pool.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        writeGuard.identity.record()
        return pool
    }

    // MARK: - Transactions

    /// Runs `body` in one `IMMEDIATE` write transaction fenced by the writer lease, and bumps the
    /// change sequence.
    ///
    /// The transaction commits only while `fence`'s epoch is the store's (its first write also
    /// records the holding in the lease history).
    ///
    /// - Parameters:
    ///   - fence: the lease's right to write, from the writer lease that holds it.
    ///   - deadline: when given, a wait for a lock held by another process ends there (the
    ///     store's busy timeout applies too).
    ///   - body: the writes, in one transaction; an error it throws rolls them all back.
    /// - Returns: the body's result.
    /// - Throws: ``StoreError`` (`staleEpoch` when the lease moved on, or the fence is another
    ///   store's); the transaction rolled back whole.
    @discardableResult
    public func write<T>(
        _ fence: LeaseFence, deadline: ContinuousClock.Instant? = nil, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        try counted { try writeHere(.fenced(fence), deadline: deadline, body) }
    }

    /// The async form of ``write(_:deadline:_:)``: suspends instead of blocking while the
    /// write connection is busy with another write of this process.
    ///
    /// A write under the lease that is this process's only write in flight runs on the caller's
    /// thread: no other process writes while the lease is held, so it does not wait for SQLite's
    /// lock, and it saves two thread hops (to GRDB's writer queue and back), about a third of a
    /// small write's cost. One behind another write of this process runs on GRDB's writer queue
    /// (it would block the caller's thread until that one ends).
    @discardableResult
    public func write<T: Sendable>(
        _ fence: LeaseFence, deadline: ContinuousClock.Instant? = nil,
        _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        try await writeAsync(.fenced(fence), deadline: deadline, body)
    }

    /// Who a transaction writes for.
    enum Writer {
        /// The holder of a lease, fenced by it.
        case fenced(LeaseFence)
        /// An ``UnfencedStore``: outside any lease, on purpose; the commit is recorded as such.
        case unfenced
        /// The lease's own bookkeeping (a takeover): recorded in the lease history, not the
        /// commit log, and never stopped by a hook.
        case leaseBookkeeping

        var epoch: Int64? {
            if case .fenced(let fence) = self { return fence.epoch }
            return nil
        }
    }

    func writeAsync<T: Sendable>(
        _ writer: Writer, deadline: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        let others = writesInFlight.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue
        defer { writesInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        if others == 0, case .fenced = writer {
            return try writeHere(writer, deadline: deadline, body)
        }
        do {
            return try await connections().writeWithoutTransaction { db in
                try self.immediate(db, writer, deadline: deadline, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// Runs `body` counted among the writes in flight.
    func counted<T>(_ body: () throws -> T) rethrows -> T {
        writesInFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        defer { writesInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        return try body()
    }

    /// One write transaction on the calling thread (GRDB runs it there when its writer queue
    /// is idle, and blocks until it is otherwise).
    func writeHere<T>(
        _ writer: Writer, deadline: ContinuousClock.Instant?, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        do {
            return try connections().writeWithoutTransaction { db in
                try immediate(db, writer, deadline: deadline, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// One IMMEDIATE transaction: refuse a store file that changed under us, admit the write
    /// (its fence), run the body, record the commit (unless it is the lease's own bookkeeping,
    /// which the lease history records), and let a test hook fail the commit or stop the
    /// process inside it.
    func immediate<T>(
        _ db: Database, _ writer: Writer, deadline: ContinuousClock.Instant? = nil,
        _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        if case .fenced(let fence) = writer, fence.store !== self {
            throw StoreError(
                .staleEpoch, "the lease fence \(fence) belongs to another store handle; nothing was written")
        }
        if let problem = writeGuard.identity.problem() {
            throw StoreError(
                .storeFileChanged,
                "\(problem); nothing was written, and nothing will be until the store is reopened")
        }
        writeGuard.beginWrite(deadline: deadline)
        var hook: StorageFaults.Injection?
        if let faults { hook = try faults.beginWrite(db, bookkeeping: writer.isBookkeeping) }
        var result: T?
        var began: ContinuousClock.Instant?
        var recorded: LeaseFence?
        var sequence: Int64?
        defer { if let began { writeGuard.noteTransaction(ContinuousClock.now - began) } }
        var oldest: Int64 = 0
        try db.inTransaction(.immediate) {
            began = ContinuousClock.now
            let transaction = StoreTransaction(db: db)
            transaction.knownOldestEpoch = knownOldestEpoch.load(ordering: .relaxed)
            defer { oldest = transaction.knownOldestEpoch }
            if case .fenced(let fence) = writer, try fence.admit(transaction) { recorded = fence }
            result = try body(transaction)
            if case .fenced(let fence) = writer { try fence.confirm() }
            if !writer.isBookkeeping { sequence = try transaction.recordCommit(fencedBy: writer.epoch) }
            if let hook { try StorageFaults.carryOut(hook) }
            return .commit
        }
        // Committed: only now is the holding in the store, and may readers be told.
        recorded?.markRecorded()
        if oldest > 0 { _ = knownOldestEpoch.max(oldest, ordering: .relaxed) }
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

    // MARK: - Reading

    /// Runs `body` on a read-only snapshot of the last commit. Never waits for a writer.
    public func read<T>(_ body: (StoreReader) throws -> T) throws -> T {
        do {
            return try connections().read { db in try body(StoreReader(db: db)) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading")
        }
    }

    /// The async form of ``read(_:)``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (StoreReader) throws -> T) async throws -> T {
        do {
            return try await connections().read { db in try body(StoreReader(db: db)) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading")
        }
    }

    // MARK: - Stopping writes

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

    /// Why this process must no longer write to the store (one of its files was deleted, renamed
    /// or replaced), or nil when all is well.
    public func fileProblem() -> String? {
        writeGuard.identity.problem()?.description
    }

    /// ``fileProblem()``, typed: which of the store's three files changed, and how.
    public func fileCheck() -> StoreFileProblem? {
        writeGuard.identity.problem()
    }

    /// Closes every connection. Further calls fail.
    public func close() throws {
        try pool.close()
    }
}

extension SharedStore.Writer {
    var isBookkeeping: Bool {
        if case .leaseBookkeeping = self { return true }
        return false
    }
}
