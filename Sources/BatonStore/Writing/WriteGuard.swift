import BatonLocking
import Foundation
import GRDB
import GRDBSQLite

/// What every write transaction of a ``SharedStore`` passes before it begins: the store file must
/// still be the one that was opened, and SQLite's busy wait for a lock held by another process
/// ends at the store's busy timeout, at the write's own deadline, or at once when the write is
/// abandoned by ``SharedStore/interrupt()``.
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
    /// The longest time this process held SQLite's write lock in one transaction (BEGIN
    /// IMMEDIATE done to COMMIT done).
    let longestTransaction = Locked(Duration.zero)

    func noteTransaction(_ duration: Duration) {
        longestTransaction.withLock { $0 = max($0, duration) }
    }
    private let state = Locked(State())

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
        Thread.sleep(forTimeInterval: nap.inSeconds)
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
