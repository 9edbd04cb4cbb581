import BatonLocking
import BatonStore
import Foundation

/// One wait for an exclusive `flock` in the kernel on one generation of the lock file, on a
/// thread of its own (a blocked `flock` cannot be interrupted from Swift), so the waiter is woken
/// the moment the lock is free. Abandoned (cancelled, timed out, or the lock file replaced by a
/// takeover), the thread, once granted the lock, gives it straight back.
final class PendingLock: Sendable {
    /// The lock file this wait is on.
    let generation: FileIdentity?
    private let state = Locked<(result: Result<FileLock, any Error>?, abandoned: Bool)>((nil, false))

    /// Starts waiting for `lock`; `onGranted` is called (on the waiting thread) when the wait ends.
    ///
    /// - Parameter executor: when the caller runs on it, the wait blocks its thread once the
    ///   caller's job returns (the grant then wakes the thread that runs the turn); otherwise a
    ///   thread of its own waits.
    init(lock: FileLock, executor: LeaseExecutor? = nil, onGranted: @escaping @Sendable () -> Void) {
        generation = lock.identity
        let wait: @Sendable () -> Void = { [self] in
            // Given up before it began: no wait at all.
            if self.state.withLock({ $0.abandoned }) {
                lock.unlock()
                return
            }
            let result = Result { try lock.lock() }.map { lock }
            let keep = self.state.withLock { state -> Bool in
                if state.abandoned { return false }
                state.result = result
                return true
            }
            if keep { onGranted() } else { lock.unlock() }
        }
        if let executor, executor.isCurrent {
            executor.blockAfterCurrentJob(wait)
            return
        }
        startThread(named: "baton.lock.wait") { wait() }
    }

    /// The lock once granted (or the error the wait ended with); nil while still waiting.
    /// Taken once.
    func take() -> Result<FileLock, any Error>? {
        state.withLock { state in
            defer { state.result = nil }
            return state.result
        }
    }

    /// Gives up the wait: a lock granted already, or later, is released at once.
    func abandon() {
        let granted = state.withLock { state -> FileLock? in
            state.abandoned = true
            defer { state.result = nil }
            // A wait that ended with an error holds no lock: there is nothing to give back.
            return try? state.result?.get()
        }
        granted?.unlock()
    }
}
