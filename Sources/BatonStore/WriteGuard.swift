import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// What every write transaction of a ``SharedStore`` passes before it begins and before it
/// commits: the store file must still be the one that was opened, an injected storage fault
/// (tests and chaos only) may fail the commit, and SQLite's busy wait for a lock held by another
/// process ends at the store's busy timeout, at the write's own deadline, or at once when the
/// write is abandoned by ``SharedStore/interrupt()``.
///
/// SQLite's own `sqlite3_interrupt` does not reach a connection that sleeps in its busy handler,
/// so a stop deadline could not end a write that waits for a lock held by another process
/// (`BEGIN IMMEDIATE` in a shell, say). The busy handler here checks for an abandon every few
/// milliseconds instead.
final class WriteGuard: Sendable {
    private struct State {
        /// Bumped by every ``abandonWrites()``.
        var abandons: UInt64 = 0
        /// ``abandons`` when the current write began: a write begun before an abandon gives up.
        var writeStartedAt: UInt64 = 0
        /// Between ``abandonWrites()`` and ``resumeWrites()``, later writes wait only briefly.
        var abandoning = false
        /// Optional deadline for the current write's busy wait.
        var writeDeadline: ContinuousClock.Instant?
    }

    /// How long a write begun after an abandon waits for a lock held elsewhere.
    static let briefWait = Duration.milliseconds(200)

    let busyTimeout: Duration
    let identity: StoreFileIdentity
    let faults = StorageFaults()
    /// The longest time this process held SQLite's write lock in one transaction (BEGIN
    /// IMMEDIATE done to COMMIT done).
    let longestTransaction = Mutex(Duration.zero)

    func noteTransaction(_ duration: Duration) {
        longestTransaction.withLock { $0 = max($0, duration) }
    }
    private let state = Mutex(State())

    init(busyTimeout: Duration, path: String) {
        self.busyTimeout = busyTimeout
        identity = StoreFileIdentity(path: path)
    }

    /// Marks the start of a write on the writer connection.
    func beginWrite(deadline: ContinuousClock.Instant?) {
        state.withLock { state in
            state.writeStartedAt = state.abandons
            state.writeDeadline = deadline
        }
    }

    /// Makes the write waiting for a lock (if any) give up at once, and later ones wait at most
    /// ``briefWait``, until ``resumeWrites()``.
    func abandonWrites() {
        state.withLock { state in
            state.abandons &+= 1
            state.abandoning = true
        }
    }

    /// Ends ``abandonWrites()``.
    func resumeWrites() {
        state.withLock { $0.abandoning = false }
    }

    /// SQLite's busy handler: keeps waiting (in short naps) while the lock is held elsewhere,
    /// until the busy timeout, the write's deadline or an abandon.
    func shouldKeepWaiting(started: ContinuousClock.Instant) -> Bool {
        let (abandoned, abandoning, deadline) = state.withLock {
            ($0.abandons != $0.writeStartedAt, $0.abandoning, $0.writeDeadline)
        }
        if abandoned { return false }
        var end = started + (abandoning ? min(busyTimeout, Self.briefWait) : busyTimeout)
        if let deadline { end = min(end, deadline) }
        let now = ContinuousClock.now
        guard now < end else { return false }
        // Short naps keep an abandon prompt; the holder's release is seen within one nap.
        let nap = min(end - now, .milliseconds(5))
        Thread.sleep(
            forTimeInterval: Double(nap.components.seconds) + Double(nap.components.attoseconds) / 1e18)
        return true
    }

    /// The busy callback to install on every connection. Each lock wait is timed from its own
    /// first call (`numberOfTries == 0`), kept per thread since connections run on their own.
    func busyCallback() -> Database.BusyCallback {
        { [self] tries in
            let key = "baton.busy.started"
            let started: ContinuousClock.Instant
            if tries == 0 {
                started = ContinuousClock.now
                Thread.current.threadDictionary[key] = BusyStart(started)
            } else {
                started = (Thread.current.threadDictionary[key] as? BusyStart)?.instant ?? ContinuousClock.now
            }
            return shouldKeepWaiting(started: started)
        }
    }

    private final class BusyStart: NSObject {
        let instant: ContinuousClock.Instant
        init(_ instant: ContinuousClock.Instant) { self.instant = instant }
    }
}

/// The identity (device and inode) of the store file as opened. A store file deleted, renamed
/// or replaced under a running process is detected by comparing it with what the path names now:
/// such a process must not write (its commits would go to a file nobody else sees).
final class StoreFileIdentity: Sendable {
    let path: String
    private let opened = Mutex<(dev: UInt64, ino: UInt64)?>(nil)

    init(path: String) {
        self.path = path
    }

    static func stat(_ path: String) -> (dev: UInt64, ino: UInt64)? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Records what the path names now (call once the store is open).
    func record() {
        let now = Self.stat(path)
        opened.withLock { $0 = now }
    }

    /// Nil when the path still names the opened file, else what happened to it.
    func problem() -> String? {
        guard let opened = opened.withLock({ $0 }) else { return nil }
        guard let now = Self.stat(path) else {
            return "the store file \(path) was deleted or renamed while this process had it open"
        }
        if now.dev != opened.dev || now.ino != opened.ino {
            return "the store file \(path) was replaced by another file while this process had it open"
        }
        return nil
    }
}

/// Storage-fault injection for tests and chaos runs: makes chosen write transactions of one
/// ``SharedStore`` fail at their commit with a real SQLite error, as a full disk, an I/O error,
/// an interrupt or a lock held elsewhere would. The transaction's body has run, so the failure
/// hits after everything it wrote and rolls all of it back.
///
/// Not for production use: nothing in Baton turns it on unless a test, `baton chaos` or
/// `baton participant --storage-fault-file` asks.
@_spi(Faults)
public final class StorageFaults: Sendable {
    /// The error an injected fault raises.
    public enum Kind: String, Sendable, CaseIterable {
        /// SQLITE_FULL: database or disk is full.
        case full
        /// SQLITE_IOERR: disk I/O error.
        case ioError = "ioerr"
        /// SQLITE_INTERRUPT: as a stop deadline's interrupt gives.
        case interrupt
        /// SQLITE_BUSY: database is locked (another process held the lock past the busy timeout).
        case busy

        var resultCode: ResultCode {
            switch self {
            case .full: .SQLITE_FULL
            case .ioError: .SQLITE_IOERR
            case .interrupt: .SQLITE_INTERRUPT
            case .busy: .SQLITE_BUSY
            }
        }
    }

    private struct Plan {
        var writes = 0
        var failing: [Int: Kind] = [:]
        var always: Kind?
        var file: String?
        var diskFull = false
        /// The connection's own page limit, while ``diskFull`` replaced it.
        var savedPageLimit: Int?
        /// Run before the numbered write begins (another process's commit landing just then).
        var before: [Int: @Sendable () -> Void] = [:]
    }

    private let plan = Mutex(Plan())

    init() {}

    /// Write transactions begun so far (committed or not).
    public var writeCount: Int { plan.withLock { $0.writes } }

    /// Fails the `n`th write transaction from now (1 is the next one) with `kind`.
    public func failWrite(_ n: Int, with kind: Kind) {
        plan.withLock { $0.failing[$0.writes + n] = kind }
    }

    /// Runs `action` just before the `n`th write transaction from now (1 is the next one)
    /// begins, on the writing thread: as another process's commit landing at that moment would.
    public func beforeWrite(_ n: Int, run action: @escaping @Sendable () -> Void) {
        plan.withLock { $0.before[$0.writes + n] = action }
    }

    /// Fails every write with `kind` until called again with nil.
    public func failAllWrites(with kind: Kind?) {
        plan.withLock { $0.always = kind }
    }

    /// A real full disk, without one: while on, the writer connection's `max_page_count` is
    /// held at the store's current size, so SQLite fails with SQLITE_FULL every write that needs
    /// a new page (a page of records) while a write that fits in place (a sync's state) still
    /// commits, as on a disk with a little room left.
    public func fillDisk(_ on: Bool) {
        plan.withLock { $0.diskFull = on }
    }

    /// While the file at `path` exists, its first line sets a fault for every write: `disk-full`
    /// as ``fillDisk(_:)``; `full`, `ioerr`, `interrupt` or `busy` as ``failAllWrites(with:)``.
    /// `stop-in-transaction` is taken once: the next data write deletes the file and stops the
    /// whole process (SIGSTOP) inside its open transaction, holding SQLite's write lock until a
    /// SIGCONT, as a process frozen mid-page would. Lets another process (a chaos run, a test)
    /// turn faults on and off.
    public func failWritesWhileFileExists(_ path: String?) {
        plan.withLock { $0.file = path }
    }

    /// The fault the file names now, if any.
    private func fileFault(_ file: String?) -> String? {
        guard let file, let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let word = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return word.trimmingCharacters(in: .whitespaces)
    }

    /// Before a write begins on the writer connection: counts it, sets or lifts the page limit
    /// of a full disk, and returns the fault its commit must fail with, if any.
    func beginWrite(_ db: Database) throws -> Kind? {
        let (kind, file, diskFull, before) = plan.withLock {
            plan -> (Kind?, String?, Bool, (@Sendable () -> Void)?) in
            plan.writes += 1
            return (
                plan.failing.removeValue(forKey: plan.writes) ?? plan.always, plan.file, plan.diskFull,
                plan.before.removeValue(forKey: plan.writes)
            )
        }
        before?()
        let word = fileFault(file)
        try limitPages(db, diskFull || word == "disk-full")
        if let kind { return kind }
        guard let word, word != "disk-full", word != "stop-in-transaction" else { return nil }
        return Kind(rawValue: word) ?? .full
    }

    private func limitPages(_ db: Database, _ limit: Bool) throws {
        let saved = plan.withLock { $0.savedPageLimit }
        if limit, saved == nil {
            let original = try Int.fetchOne(db, sql: "PRAGMA max_page_count") ?? 0
            let current = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(max(1, current))")
            plan.withLock { $0.savedPageLimit = original }
        } else if !limit, let saved {
            try db.execute(sql: "PRAGMA max_page_count = \(saved)")
            plan.withLock { $0.savedPageLimit = nil }
        }
    }

    /// True (once) when the fault file asks the next data write to stop the process inside its
    /// transaction; the request is consumed by deleting the file.
    func takeStopRequest() -> Bool {
        let file = plan.withLock { $0.file }
        guard let file, fileFault(file) == "stop-in-transaction" else { return false }
        return unlink(file) == 0
    }

    func raise(_ kind: Kind) throws -> Never {
        throw DatabaseError(resultCode: kind.resultCode, message: "\(kind.rawValue) (injected storage fault)")
    }
}

/// SQLite's write lock on a store, held by a connection of its own, as another process would
/// hold it with `sqlite3 D/store.sqlite` and `BEGIN IMMEDIATE;` (tests and chaos runs only).
@_spi(Faults)
public final class ForeignWriteLock: Sendable {
    /// The connection holding the lock, until ``release()``.
    private let connection: Mutex<OpaquePointer?>

    /// Opens `path` and takes its write lock, waiting up to `timeout` for a writer in progress.
    public init(path: String, timeout: Duration = .seconds(30)) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            sqlite3_close(db)
            throw StoreError(.database, "cannot open \(path) to lock it")
        }
        sqlite3_busy_timeout(db, Int32(timeout.components.seconds * 1000))
        let code = sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        guard code == SQLITE_OK else {
            sqlite3_close(db)
            throw StoreError(.database, "cannot take the write lock of \(path): SQLite error \(code)")
        }
        connection = Mutex(db)
    }

    /// Commits the empty transaction and closes the connection (once).
    public func release() {
        connection.withLock { db in
            guard let open = db else { return }
            sqlite3_exec(open, "COMMIT", nil, nil, nil)
            sqlite3_close(open)
            db = nil
        }
    }

    deinit { release() }
}
