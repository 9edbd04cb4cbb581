import Foundation
import GRDB
import GRDBSQLite
import Logging

/// The SQLite store that every participant shares: `D/store.sqlite` in WAL mode.
///
/// Readers in any process see every commit and are never blocked by the writer. Writes run in
/// `IMMEDIATE` transactions, bump the change sequence, and can be fenced by a lease epoch so a
/// process that lost the writer lease can never commit.
///
/// ```swift
/// let store = try SharedStore.open(directory: SharedDirectory(path: "/tmp/d"), logger: logger)
/// try store.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
/// let entry = try store.upsert(["Id": "001", "Name": "Acme"], into: "accounts", externalIdPath: "Id")
/// ```
public final class SharedStore: Sendable {
    /// The shared directory the store lives in.
    public let directory: SharedDirectory
    let pool: DatabasePool
    let logger: Logger
    let checkpoints: WALCheckpoints

    init(directory: SharedDirectory, pool: DatabasePool, checkpoints: WALCheckpoints, logger: Logger) {
        self.directory = directory
        self.pool = pool
        self.checkpoints = checkpoints
        self.logger = logger
    }

    /// Opens the store in `directory`, creating and migrating it if needed.
    ///
    /// Opening and migrating happen under an exclusive `flock` on `D/setup.lock`, so processes
    /// that start together never race on the schema. The store file gets mode 0600.
    ///
    /// - Parameter create: when false, a missing store is an error instead of being created.
    /// - Throws: ``StoreError`` (`notADatabase` when the file is not SQLite, `schemaTooNew` when a
    ///   newer Baton wrote it).
    public static func open(directory: SharedDirectory, create: Bool = true, logger: Logger) throws
        -> SharedStore
    {
        let setupLock = try FileLock(path: directory.setupLockPath)
        try setupLock.lock()
        defer { setupLock.unlock() }

        let path = directory.storePath
        if !create, !FileManager.default.fileExists(atPath: path) {
            throw StoreError(
                .directoryUnavailable,
                "no store in \(directory.path); start a participant there or pass the right --dir")
        }
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        do {
            let checkpoints = WALCheckpoints()
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
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
            return SharedStore(directory: directory, pool: pool, checkpoints: checkpoints, logger: logger)
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "opening \(path)")
        }
    }

    // MARK: - Transactions

    /// Runs `body` in one `IMMEDIATE` write transaction and bumps the change sequence.
    ///
    /// - Parameter epoch: when given, the transaction commits only if the lease epoch in the
    ///   store still equals it (fencing); otherwise it rolls back with `staleEpoch`.
    /// - Returns: the body's result.
    @discardableResult
    public func write<T>(fencedBy epoch: Int64? = nil, _ body: (StoreTransaction) throws -> T) throws -> T {
        do {
            return try pool.writeWithoutTransaction { db in try Self.immediate(db, fencedBy: epoch, body) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// The async form of ``write(fencedBy:_:)``: suspends instead of blocking while the write
    /// connection is busy.
    @discardableResult
    public func write<T: Sendable>(
        fencedBy epoch: Int64? = nil, _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        do {
            return try await pool.writeWithoutTransaction { db in
                try Self.immediate(db, fencedBy: epoch, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "writing")
        }
    }

    /// One IMMEDIATE transaction: check the fence, run the body, record the commit (unless it
    /// is the lease's own bookkeeping, which the lease history records).
    static func immediate<T>(
        _ db: Database, fencedBy epoch: Int64?, logged: Bool = true, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        var result: T?
        try db.inTransaction(.immediate) {
            let transaction = StoreTransaction(db: db)
            try transaction.checkFence(epoch)
            result = try body(transaction)
            if logged { try transaction.recordCommit(fencedBy: epoch) }
            return .commit
        }
        return result!
    }

    // MARK: - Lease bookkeeping

    /// Records that `name` (process `pid`) took the writer lease, in a transaction of its own
    /// that is not a data commit (no change-sequence bump, no commit-log row: the lease history
    /// is its record). Call only while holding the lease lock.
    ///
    /// - Returns: the new epoch.
    public func beginLeaseEpoch(name: String, pid: Int32, now: Int64) throws -> Int64 {
        try bookkeeping { try $0.beginLeaseEpoch(name: name, pid: pid, now: now) }
    }

    /// Closes the history row of `epoch`, like ``beginLeaseEpoch(name:pid:now:)`` not a data
    /// commit. Call before unlocking the lease.
    public func endLeaseEpoch(_ epoch: Int64) throws {
        try bookkeeping { try $0.endLeaseEpoch(epoch) }
    }

    private func bookkeeping<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        do {
            return try pool.writeWithoutTransaction { db in
                try Self.immediate(db, fencedBy: nil, logged: false, body)
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "recording the writer lease")
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
    public func interrupt() {
        pool.interrupt()
    }

    /// A passive WAL checkpoint: copies what it can without waiting for readers.
    public func checkpoint() throws {
        do {
            _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            checkpoints.checkpointed()
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
            logger.warning("WAL checkpoint failed", metadata: ["error": "\(error)"])
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
