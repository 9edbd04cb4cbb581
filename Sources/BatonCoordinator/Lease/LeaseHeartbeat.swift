import BatonLocking
import BatonStore
import Foundation

/// The holder's heartbeat: a thread of its own (never a task, which could starve behind a busy
/// cooperative pool) that rewrites the held lock file's ``HeartbeatRecord`` every quarter term,
/// and checks on each beat that the lock file is still the one it holds. When it is not (a
/// takeover replaced it, or somebody deleted it), it calls `onLost` once and stops beating.
///
/// One thread per lease, kept across holdings (a turn of the lease spawns nothing); it sleeps
/// while nothing is held. A frozen process (SIGSTOP, the cgroup freezer) stops beating with all
/// its threads: that is what lets a waiter take the lease over.
final class LeaseHeartbeat: Sendable {
    private struct Holding {
        var lock: FileLock
        var epoch: Int64
        var takenOver: Int64
        var closing: LeaseClosing?
    }

    private struct State {
        var holding: Holding?
        var started = false
        /// The thread waits with no timeout (nothing held): a new holding must wake it.
        var idle = false
        var closed = false
    }

    private let term: Duration
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let onLost: @Sendable () -> Void

    init(term: Duration, onLost: @escaping @Sendable () -> Void) {
        self.term = term
        self.onLost = onLost
    }

    /// Ends the thread (the lease that owns it is going away).
    func close() {
        state.withLock {
            $0.closed = true
            $0.holding = nil
        }
        wake.signal()
    }

    /// Starts beating into `lock` (the first beat now).
    ///
    /// - Parameters:
    ///   - takenOver: the epoch this holding takes over, when it does.
    ///   - closing: how the interval before this holding ends, carried in the record until the
    ///     holding's first write records it.
    func hold(_ lock: FileLock, epoch: Int64, takenOver: Int64 = 0, closing: LeaseClosing? = nil) {
        let (start, signal) = state.withLock { state -> (Bool, Bool) in
            state.holding = Holding(lock: lock, epoch: epoch, takenOver: takenOver, closing: closing)
            defer {
                state.started = true
                state.idle = false
            }
            return (!state.started, state.idle)
        }
        beat()
        if start {
            // Until ``close()``, which the owning lease calls when it goes away.
            startThread(named: "baton.heartbeat") { [self] in
                while runOnce() {}
            }
        } else if signal {
            // A thread already beating every quarter term needs no wake-up (a contended turn of
            // the lease costs no thread switch).
            wake.signal()
        }
    }

    /// Stops beating (the lease is being released); no beat starts after this returns.
    ///
    /// - Parameters:
    ///   - released: when given, the last record says the lease was let go then (ms since 1970),
    ///     for the next holder to record.
    ///   - passing: when given, the closing the last record passes on (nil: none), in place of
    ///     the one the holding was given.
    func drop(released: Int64? = nil, passing: LeaseClosing?? = nil) {
        state.withLock { state in
            if let released, var holding = state.holding {
                if let passing { holding.closing = passing }
                record(holding, released: released).withBytes { holding.lock.overwrite($0) }
            }
            state.holding = nil
        }
    }

    var termMillis: Int64 {
        term.inWholeMilliseconds
    }

    private func record(_ holding: Holding, released: Int64 = 0) -> HeartbeatRecord {
        HeartbeatRecord(
            pid: getpid(), epoch: holding.epoch, beat: MonotonicClock.nanos(), termMillis: termMillis,
            takenOver: holding.takenOver, released: released, closing: holding.closing)
    }

    private func beat() {
        // Under the mutex, so a beat never lands after `drop()` returned.
        state.withLock { state in
            guard let holding = state.holding else { return }
            record(holding).withBytes { holding.lock.overwrite($0) }
        }
    }

    /// One quarter term of the thread's life; false once the lease is gone.
    private func runOnce() -> Bool {
        let idle = state.withLock { state -> Bool in
            state.idle = state.holding == nil
            return state.idle
        }
        if idle {
            wake.wait()
        } else {
            _ = wake.wait(timeout: .now() + .milliseconds(Int(max(1, termMillis / 4))))
        }
        let (closed, holding) = state.withLock { ($0.closed, $0.holding) }
        if closed { return false }
        guard let holding else { return true }
        guard holding.lock.isStillAtPath else {
            let lost = state.withLock { state -> Bool in
                guard state.holding?.lock === holding.lock else { return false }
                state.holding = nil
                return true
            }
            if lost { onLost() }
            return true
        }
        beat()
        return true
    }
}
