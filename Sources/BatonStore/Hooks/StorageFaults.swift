import BatonLocking
import Foundation
import GRDB

/// Storage-fault injection for tests and chaos runs: makes chosen write transactions of one
/// ``SharedStore`` fail at their commit with a real SQLite error, as a full disk, an I/O error,
/// an interrupt or a lock held elsewhere would. The transaction's body has run, so the failure
/// hits after everything it wrote and rolls all of it back.
///
/// A test hook, given to ``SharedStore`` when it is opened (its `faults:` form, visible inside
/// this package only). Production code never makes one: only tests, `baton chaos` and
/// `baton participant --storage-fault-file` do, and a store opened without one makes no hook
/// call on its write path.
package final class StorageFaults: Sendable {
    /// The error an injected fault raises.
    package enum Kind: String, Sendable, CaseIterable {
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

    private let plan = Locked(Plan())

    package init() {}

    /// Write transactions begun so far (committed or not).
    package var writeCount: Int { plan.withLock { $0.writes } }

    /// Fails the `n`th write transaction from now (1 is the next one) with `kind`.
    package func failWrite(_ n: Int, with kind: Kind) {
        plan.withLock { $0.failing[$0.writes + n] = kind }
    }

    /// Runs `action` just before the `n`th write transaction from now (1 is the next one)
    /// begins, on the writing thread: as another process's commit landing at that moment would.
    package func beforeWrite(_ n: Int, run action: @escaping @Sendable () -> Void) {
        plan.withLock { $0.before[$0.writes + n] = action }
    }

    /// Fails every write with `kind` until called again with nil.
    package func failAllWrites(with kind: Kind?) {
        plan.withLock { $0.always = kind }
    }

    /// A real full disk, without one: while on, the writer connection's `max_page_count` is
    /// held at the store's current size, so SQLite fails with SQLITE_FULL every write that needs
    /// a new page (a page of records) while a write that fits in place (a sync's state) still
    /// commits, as on a disk with a little room left.
    package func fillDisk(_ on: Bool) {
        plan.withLock { $0.diskFull = on }
    }

    /// While the file at `path` exists, its first line sets a fault for every write: `disk-full`
    /// as ``fillDisk(_:)``; `full`, `ioerr`, `interrupt` or `busy` as ``failAllWrites(with:)``.
    /// `stop-in-transaction` is taken once: the next data write deletes the file and stops the
    /// whole process (SIGSTOP) inside its open transaction, holding SQLite's write lock until a
    /// SIGCONT, as a process frozen mid-page would. Lets another process (a chaos run, a test)
    /// turn faults on and off.
    package func failWritesWhileFileExists(_ path: String?) {
        plan.withLock { $0.file = path }
    }

    /// The fault the file names now, if any.
    private func fileFault(_ file: String?) -> String? {
        // No file, or none readable, names no fault (a test-only hook).
        guard let file, let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let word = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return word.trimmingCharacters(in: .whitespaces)
    }

    /// What a hook does to one write: fail its commit, stop the process inside it, or both.
    struct Injection {
        var fault: Kind?
        var stop: Bool
    }

    /// Before a write begins on the writer connection: counts it, sets or lifts the page limit
    /// of a full disk, and returns what must happen to it before its commit, if anything. The
    /// lease's own bookkeeping is never stopped inside its transaction.
    func beginWrite(_ db: Database, bookkeeping: Bool) throws -> Injection? {
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
        let stop = !bookkeeping && word == "stop-in-transaction" && takeStopRequest(file)
        var fault = kind
        if fault == nil, let word, word != "disk-full", word != "stop-in-transaction" {
            fault = Kind(rawValue: word) ?? .full
        }
        guard fault != nil || stop else { return nil }
        return Injection(fault: fault, stop: stop)
    }

    /// Inside the transaction, after its body: stops the process (a stop requested), then fails
    /// the commit (a fault requested).
    static func carryOut(_ injection: Injection) throws {
        // Thread-directed, so this thread stops before it returns (a process-directed SIGSTOP
        // may be taken by another thread while this one commits).
        if injection.stop { pthread_kill(pthread_self(), SIGSTOP) }
        if let fault = injection.fault { try raise(fault) }
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
    private func takeStopRequest(_ file: String?) -> Bool {
        guard let file else { return false }
        return unlink(file) == 0
    }

    static func raise(_ kind: Kind) throws -> Never {
        throw DatabaseError(resultCode: kind.resultCode, message: "\(kind.rawValue) (injected storage fault)")
    }
}
