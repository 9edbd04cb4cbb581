import BatonStore
import Foundation
import Logging
import Synchronization

/// The writer lease: an exclusive `flock` on `D/writer.lock` (its own descriptor, `O_CLOEXEC`,
/// held for the whole lease, never the database file), recorded in the store's lease table.
///
/// Taking it bumps the epoch and appends a history row; releasing closes the row. The kernel
/// frees the lock when the holder dies, and the next holder closes the dead one's row.
public final class WriterLease: Sendable {
    /// A held lease.
    public struct Held: Sendable, Hashable {
        /// The epoch every write of this holder is fenced by.
        public let epoch: Int64
        /// When it was taken (ms since 1970).
        public let acquired: Int64
    }

    let directory: SharedDirectory
    let store: SharedStore
    let name: String
    let lock: FileLock
    /// The lease this process holds, if any: taking it twice returns the same epoch, and only
    /// the current holding can be released.
    private let state = Mutex<Held?>(nil)

    /// The lease held now by this process, if any.
    public var current: Held? { state.withLock { $0 } }

    /// Prepares (but does not take) the lease for participant `name`.
    public init(directory: SharedDirectory, store: SharedStore, name: String) throws {
        self.directory = directory
        self.store = store
        self.name = name
        lock = try FileLock(path: directory.writerLockPath)
    }

    /// Takes the lease if it is free right now.
    ///
    /// - Returns: the held lease, or `nil` when someone else holds it.
    public func tryAcquire() throws -> Held? {
        if let held = current { return held }
        guard try lock.tryLock() else { return nil }
        do {
            let now = Clock.nowMillis()
            let epoch = try store.write { try $0.beginLeaseEpoch(name: name, pid: getpid(), now: now) }
            let held = Held(epoch: epoch, acquired: now)
            state.withLock { $0 = held }
            return held
        } catch {
            lock.release()
            throw error
        }
    }

    /// Waits for the lease, retrying every `interval`, until `deadline` (forever when nil).
    /// `mayTry` is asked before each attempt (priority: a lower-priority participant holds back
    /// while a higher one waits).
    ///
    /// - Throws: `CancellationError` when the task is cancelled, `leaseTimeout` past the deadline.
    public func acquire(
        deadline: ContinuousClock.Instant? = nil, interval: Duration = .milliseconds(5),
        mayTry: @Sendable () -> Bool = { true }
    ) async throws -> Held {
        while true {
            try Task.checkCancellation()
            if mayTry(), let held = try tryAcquire() { return held }
            if let deadline, ContinuousClock.now >= deadline {
                throw CoordinatorError(.leaseTimeout, "the writer lease was not free in time")
            }
            try await Task.sleep(for: interval)
        }
    }

    /// Closes the history row and unlocks; does nothing unless `held` is the current holding.
    public func release(_ held: Held) {
        let isCurrent = state.withLock { current in
            guard current == held else { return false }
            current = nil
            return true
        }
        guard isCurrent else { return }
        do {
            try store.write { try $0.endLeaseEpoch(held.epoch) }
        } catch {
            // The row stays open; the next holder closes it as taken over.
        }
        lock.release()
    }
}
