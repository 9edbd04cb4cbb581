import BatonStore
import Foundation
import Logging
import Synchronization

/// The writer lease: an exclusive `flock` on `D/writer.lock` (its own descriptor, `O_CLOEXEC`,
/// held for the whole lease, never the database file), recorded in the store's lease table.
///
/// Taking it bumps the epoch and appends a history row; releasing closes the row. The kernel
/// frees the lock when the holder dies, and the next holder closes the dead one's row. A waiter
/// blocks in the kernel (`flock` on a thread of its own), so it is woken the moment the lock is
/// free: no polling.
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
    /// The lease this process holds, if any, and the descriptor holding the lock: taking it
    /// twice returns the same epoch, and only the current holding can be released.
    private let state = Mutex<(held: Held?, lock: FileLock?)>((nil, nil))

    /// The lease held now by this process, if any.
    public var current: Held? { state.withLock { $0.held } }

    /// Whether the lock this process holds is still on the file `D/writer.lock` names (false
    /// once that file was deleted or replaced, or when nothing is held).
    public var holdsLockFile: Bool { state.withLock { $0.lock?.isStillAtPath ?? false } }

    /// Prepares (but does not take) the lease for participant `name`.
    public init(directory: SharedDirectory, store: SharedStore, name: String) throws {
        self.directory = directory
        self.store = store
        self.name = name
        // Fail early (and clearly) when the lock file cannot be opened.
        _ = try FileLock(path: directory.writerLockPath)
    }

    /// Takes the lease if it is free right now.
    ///
    /// - Returns: the held lease, or `nil` when someone else holds it.
    public func tryAcquire() throws -> Held? {
        if let held = current { return held }
        let lock = try FileLock(path: directory.writerLockPath)
        guard try lock.tryLock() else { return nil }
        guard lock.isStillAtPath else {
            lock.unlock()
            return nil
        }
        return try begin(with: lock)
    }

    /// Records the new epoch for a lock just taken; unlocks it if that fails.
    private func begin(with lock: FileLock) throws -> Held {
        do {
            let (epoch, acquired) = try store.beginLeaseEpoch(name: name, pid: getpid())
            let held = Held(epoch: epoch, acquired: acquired)
            state.withLock { $0 = (held, lock) }
            store.holdCheckpoints()
            return held
        } catch {
            lock.unlock()
            throw error
        }
    }

    /// Waits for the lease until `deadline` (forever when nil).
    ///
    /// The wait is in the kernel: the lock is granted the moment its holder releases it or dies.
    /// `mayTry` is asked before each attempt and again once the lock is granted (priority: a
    /// lower-priority participant holds back, and hands a granted lock straight back, while a
    /// higher one waits); while it says no, the wait follows the participants' published states
    /// (inotify), re-checking at least every `interval`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled, `leaseTimeout` past the deadline.
    public func acquire(
        deadline: ContinuousClock.Instant? = nil, interval: Duration = .milliseconds(100),
        mayTry: @Sendable () -> Bool = { true }
    ) async throws -> Held {
        if let held = current { return held }
        var changes: ParticipantChanges?
        defer { changes?.stop() }
        while true {
            try Task.checkCancellation()
            // Changes from here on wake the wait below, even if they land before it starts.
            let seen = changes?.rings ?? 0
            if mayTry() {
                let lock = try await KernelLockWait.lock(path: directory.writerLockPath, deadline: deadline)
                // A lock on a writer.lock deleted or replaced meanwhile guards nothing: the next
                // taker would open the new file. Wait again, on the file the path names now.
                if !lock.isStillAtPath {
                    lock.unlock()
                    continue
                }
                if mayTry() { return try begin(with: lock) }
                // A higher-priority participant started waiting meanwhile: let it go first.
                lock.unlock()
            }
            if let deadline, ContinuousClock.now >= deadline {
                throw CoordinatorError(.leaseTimeout, "the writer lease was not free in time")
            }
            if changes == nil {
                // Watch first, then look again, so a change made in between is not missed.
                changes = ParticipantChanges(directory: directory)
                continue
            }
            var wait = interval
            if let deadline { wait = min(wait, deadline - ContinuousClock.now) }
            await changes?.wait(after: seen, timeout: wait)
        }
    }

    /// Closes the history row and unlocks (closing the descriptor, which wakes the waiters);
    /// does nothing unless `held` is the current holding.
    ///
    /// - Parameter bookkeepingDeadline: how long closing the row may wait for a lock held by
    ///   another process; past it (or on any failure) the row stays open and the next holder
    ///   closes it. The lock is released either way.
    public func release(_ held: Held, bookkeepingDeadline: ContinuousClock.Instant? = nil) {
        let lock = state.withLock { state -> FileLock? in
            guard state.held == held else { return nil }
            defer { state = (nil, nil) }
            return state.lock
        }
        guard let lock else { return }
        do {
            try store.endLeaseEpoch(held.epoch, deadline: bookkeepingDeadline)
        } catch {
            // The row stays open; the next holder closes it as taken over.
        }
        lock.unlock()
        // Checkpoints held back while the lease was held run now, while nobody waits for them.
        store.releaseCheckpoints()
    }
}

extension WriterLease {
    /// Takes the lease (waiting up to `timeout`, forever when nil), runs `body` with the held
    /// lease, whose epoch fences its writes, and releases it, also when `body` throws. For tools
    /// and apps that write now and then, as a participant would.
    ///
    /// - Throws: `leaseTimeout` naming the current holder when the lease was not free in time.
    public func withLease<T: Sendable>(
        timeout: Duration? = nil, _ body: (Held) async throws -> T
    ) async throws -> T {
        let held: Held
        do {
            held = try await acquire(deadline: timeout.map { ContinuousClock.now + $0 })
        } catch let error as CoordinatorError where error.code == .leaseTimeout {
            let history = (try? await store.read { try $0.leaseHistory() }) ?? []
            let holder = history.last { $0.released == nil }
            let who = holder.map { "'\($0.name)' (pid \($0.pid))" } ?? "another process"
            throw CoordinatorError(
                .leaseTimeout,
                "the writer lease is held by \(who) and was not free within \(timeout.map { "\($0)" } ?? "the wait"); send it to the background (baton signal --dir \(directory.path) NAME background) or wait longer with --timeout"
            )
        }
        do {
            let result = try await body(held)
            release(held)
            return result
        } catch {
            release(held)
            throw error
        }
    }
}

/// One wait for an exclusive `flock` in the kernel, on a thread of its own (a blocked `flock`
/// cannot be interrupted from Swift), so the waiter is woken the moment the lock is free.
/// Cancelled or timed out, the caller goes on at once; the abandoned thread, once granted the
/// lock, gives it straight back.
enum KernelLockWait {
    final class Outcome: Sendable {
        private let state = Mutex<(done: Bool, continuation: CheckedContinuation<FileLock, any Error>?)>(
            (false, nil))

        func set(_ continuation: CheckedContinuation<FileLock, any Error>) {
            let early = state.withLock { state -> Bool in
                if state.done { return true }
                state.continuation = continuation
                return false
            }
            if early { continuation.resume(throwing: CancellationError()) }
        }

        /// Resumes the waiter with `result` if nothing did yet; false when too late.
        @discardableResult
        func finish(_ result: Result<FileLock, any Error>) -> Bool {
            let continuation = state.withLock { state -> CheckedContinuation<FileLock, any Error>?? in
                if state.done { return nil }
                state.done = true
                defer { state.continuation = nil }
                return .some(state.continuation)
            }
            guard let continuation else { return false }
            continuation?.resume(with: result)
            return true
        }
    }

    static func lock(path: String, deadline: ContinuousClock.Instant?) async throws -> FileLock {
        let lock = try FileLock(path: path)
        if try lock.tryLock() { return lock }
        let outcome = Outcome()
        let timer = deadline.map { deadline in
            Task {
                try await Task.sleep(until: deadline)
                outcome.finish(
                    .failure(CoordinatorError(.leaseTimeout, "the writer lease was not free in time")))
            }
        }
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.set(continuation)
                let thread = Thread {
                    let result = Result { try lock.lock() }.map { lock }
                    if !outcome.finish(result) { lock.unlock() }
                }
                thread.name = "baton.lease.wait"
                thread.start()
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }
}

/// Wakes a waiting acquisition when a participant publishes its state, when `wait` times out,
/// or when the task is cancelled.
final class ParticipantChanges: Sendable {
    private let state = Mutex<(rings: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))
    private let listener = Mutex<Task<Void, Never>?>(nil)

    init(directory: SharedDirectory) {
        guard
            let events = try? DirectoryWatcher(root: directory.path, subdirectories: ["participants"])
                .events()
        else { return }
        let task = Task { [self] in
            for await event in events {
                // Junk in participants/ never wakes a waiter.
                if case .changed(_, let name) = event, !ParticipantStatus.isStatusFile(name, in: directory) {
                    continue
                }
                ring()
            }
        }
        listener.withLock { $0 = task }
    }

    func stop() {
        listener.withLock { $0?.cancel() }
    }

    private func ring() {
        let waiter = state.withLock { state in
            state.rings += 1
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Changes seen so far.
    var rings: Int { state.withLock { $0.rings } }

    /// Returns once there were more than `seen` changes, after `timeout`, or on cancellation,
    /// whichever comes first.
    func wait(after seen: Int, timeout: Duration) async {
        let timer = Task { [self] in
            do {
                try await Task.sleep(for: timeout)
                ring()
            } catch {
                // Cancelled: the wait ended first.
            }
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.rings != seen { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }
}
