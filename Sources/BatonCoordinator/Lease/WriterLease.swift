import BatonStore
import Foundation
import Logging
import Synchronization

/// The writer lease: an exclusive `flock` on `D/writer.lock` (its own descriptor, `O_CLOEXEC`,
/// held for the whole lease, never the database file), renewed by a heartbeat written into the
/// lock file every quarter term, and recorded in the store's lease history by the holder's
/// first write (see ``LeaseFence``).
///
/// Taking it picks the next epoch; the first write through its fence records it, closing the
/// interval before it. Releasing writes the release time into the lock file, and the next
/// holder's first write records that: a turn of the lease costs no transaction of its own, and
/// the history stays complete (``LeaseHistory`` reads a release not yet recorded from the lock
/// file). The kernel frees the lock when the holder dies, and the next holder closes the dead
/// one's interval. A waiter blocks in the kernel (`flock` on a thread of its own), so it is
/// woken the moment the lock is free: no polling.
///
/// A holder that stops renewing for a full term (frozen by SIGSTOP or the cgroup freezer, hung)
/// keeps its `flock` forever, so a waiter takes the lease over: it locks a fresh lock file and,
/// in one transaction that succeeds only if the epoch is still the holder's, starts the next
/// epoch and renames its file over `D/writer.lock`. That new generation is what everyone locks
/// from then on (waiters on the old one are woken by inotify); the old holder's fenced writes
/// fail, and its heartbeat notices the replaced file when it wakes.
public final class WriterLease: Sendable {
    /// A held lease.
    public struct Held: Sendable, Hashable {
        /// What this holding's writes go through: `store.write(.lease(held.fence))`.
        public let fence: LeaseFence
        /// Set when this holding took the lease over from a holder that stopped renewing it.
        public let takeover: Takeover?

        /// The epoch every write of this holder is fenced by.
        public var epoch: Int64 { fence.epoch }
        /// When it was taken (ms since 1970).
        public var acquired: Int64 { fence.acquired }
        /// The write access this holding grants.
        public var access: WriteAccess { .lease(fence) }

        public init(fence: LeaseFence, takeover: Takeover? = nil) {
            self.fence = fence
            self.takeover = takeover
        }
    }

    /// A lease taken over: from whom, and how it looked.
    public struct Takeover: Sendable, Hashable {
        /// The epoch taken over.
        public var epoch: Int64
        /// The old holder, from the lease history (nil when it had not recorded its epoch yet).
        public var name: String?
        public var pid: Int32?
        /// What the kernel said of the old holder when the takeover was decided. A takeover of a
        /// holder that was `running` is a false one: it was only slow to beat.
        public var holderState: ProcessState
        /// How long the holder had been silent.
        public var silentMillis: Double

        public init(epoch: Int64, name: String?, pid: Int32?, holderState: ProcessState, silentMillis: Double)
        {
            self.epoch = epoch
            self.name = name
            self.pid = pid
            self.holderState = holderState
            self.silentMillis = silentMillis
        }
    }

    /// The lock file's holder could not be taken over because it holds SQLite's write lock.
    public struct Blocked: Sendable, Hashable {
        public var name: String
        public var pid: Int32
        public var holderState: ProcessState
        /// "host (pid 123) is stopped inside a write transaction; resume or kill it".
        public var message: String
    }

    let directory: SharedDirectory
    let store: SharedStore
    let name: String
    /// How long a holder may go without renewing before a waiter takes the lease over.
    public let term: Duration
    /// How long a takeover waits for SQLite's write lock before it says the holder is blocking.
    let takeoverLockWait: Duration
    /// Renews the lease while held (one thread for the lease's whole life).
    private let heartbeat: LeaseHeartbeat
    /// The lease this process holds, if any, and the descriptor holding the lock: taking it
    /// twice returns the same epoch, and only the current holding can be released.
    private let state = Mutex<(held: Held?, lock: FileLock?)>((nil, nil))
    private let temporaryFiles = Atomic<Int>(0)
    /// What wakes a waiting acquisition, set up by the first wait and kept for the lease's life
    /// (a contended turn of the lease sets nothing up).
    private let changes = Mutex<LeaseChanges?>(nil)

    private func watchChanges() -> LeaseChanges {
        changes.withLock { changes in
            if let changes { return changes }
            let created = LeaseChanges(directory: directory)
            changes = created
            return created
        }
    }

    /// The lease held now by this process, if any.
    public var current: Held? { state.withLock { $0.held } }

    /// Whether the lock this process holds is still on the file `D/writer.lock` names (false
    /// once that file was deleted or replaced, or when nothing is held).
    public var holdsLockFile: Bool { state.withLock { $0.lock?.isStillAtPath ?? false } }

    /// Prepares (but does not take) the lease for participant `name`.
    ///
    /// - Parameters:
    ///   - term: the lease term: the holder renews every quarter of it, and a holder silent for
    ///     a whole term is taken over.
    ///   - onLost: called (on the heartbeat's thread) when the held lock file was replaced or
    ///     deleted: the lease was taken over, or can no longer be trusted.
    public init(
        directory: SharedDirectory, store: SharedStore, name: String, term: Duration = .seconds(2),
        takeoverLockWait: Duration = .milliseconds(250), onLost: @escaping @Sendable () -> Void = {}
    ) throws {
        self.directory = directory
        self.store = store
        self.name = name
        self.term = term
        self.takeoverLockWait = takeoverLockWait
        self.heartbeat = LeaseHeartbeat(term: term, onLost: onLost)
        // Fail early (and clearly) when the lock file cannot be opened.
        _ = try FileLock(path: directory.writerLockPath)
    }

    deinit {
        heartbeat.close()
        changes.withLock { $0?.stop() }
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

    /// Starts a holding on a lock just taken: picks the next epoch (above the store's and the
    /// lock file's, so an epoch a holder took without writing is never reused), and beats from
    /// the start. Nothing is written to the store: the holding's first write records it.
    private func begin(with lock: FileLock) throws -> Held? {
        // Read what the last holder left before the first beat overwrites it.
        let last = HeartbeatRecord(parsing: lock.recorded() ?? "")
        let storeEpoch: Int64
        do {
            // On the write connection, which the holding's first write then finds current: under
            // 8-way contention a reader's read took 110 µs at the median, this one 66 µs.
            storeEpoch = try store.leaseEpochForWriting()
        } catch {
            lock.unlock()
            throw error
        }
        let epoch = max(storeEpoch, last?.epoch ?? 0) + 1
        let closing = last?.closing(of: storeEpoch)
        heartbeat.hold(lock, epoch: epoch, closing: closing)
        let fence = LeaseFence(
            epoch: epoch, holder: name, pid: getpid(), granted: WallClock.nowMillis(), previous: storeEpoch,
            closing: closing, stillHeld: { lock.isStillAtPath })
        return adopt(Held(fence: fence, takeover: nil), lock)
    }

    private func adopt(_ held: Held, _ lock: FileLock) -> Held {
        state.withLock { $0 = (held, lock) }
        store.holdCheckpoints()
        return held
    }

    /// Waits for the lease until `deadline` (forever when nil).
    ///
    /// The wait is in the kernel: the lock is granted the moment its holder releases it or dies.
    /// Meanwhile the holder's heartbeat is watched (``TakeoverWatch``): one silent for a full
    /// term is taken over. `mayTry` is asked before each attempt and again once the lock is
    /// granted (priority: a lower-priority participant holds back, and hands a granted lock
    /// straight back, while a higher one waits); while it says no, the wait follows the
    /// participants' published states (inotify), re-checking at least every `interval`.
    ///
    /// - Parameter onBlocked: told when a takeover is held up by a holder that keeps SQLite's
    ///   write lock (frozen inside a write transaction), and told nil once that is over.
    /// - Throws: `CancellationError` when the task is cancelled, `leaseTimeout` past the deadline.
    public func acquire(
        deadline: ContinuousClock.Instant? = nil, interval: Duration = .milliseconds(100),
        mayTry: @Sendable () -> Bool = { true }, onBlocked: @Sendable (Blocked?) -> Void = { _ in }
    ) async throws -> Held {
        if let held = current { return held }
        let path = directory.writerLockPath
        // A free lock is taken without setting up a wait (a turn of the lease stays cheap).
        if mayTry() {
            let lock = try FileLock(path: path)
            if try lock.tryLock() {
                if lock.isStillAtPath, let held = try begin(with: lock) { return held }
            }
            lock.unlock()
        }
        // Watch first, then look again, so a change made in between is not missed.
        let changes = watchChanges()
        var pending: PendingLock?
        var watch = TakeoverWatch(defaultTerm: term)
        var blocked: Blocked?
        var pursuing: (observation: TakeoverWatch.Observation, silentNanos: UInt64)?
        defer {
            pending?.abandon()
            if blocked != nil { onBlocked(nil) }
        }
        while true {
            try Task.checkCancellation()
            let seen = changes.rings
            var wait: Duration? = nil
            if mayTry() {
                if let granted = pending?.take() {
                    pending = nil
                    let lock = try granted.get()
                    // A lock on a writer.lock deleted or replaced meanwhile guards nothing: the
                    // next taker would open the new file. Wait again, on the file named now.
                    if lock.isStillAtPath, mayTry(), let held = try begin(with: lock) { return held }
                    lock.unlock()
                    continue
                }
                let generation = FileIdentity.of(path)
                if pending == nil || generation == nil || pending?.generation != generation {
                    pending?.abandon()
                    pending = nil
                    let lock = try FileLock(path: path)
                    if try lock.tryLock() {
                        if lock.isStillAtPath, let held = try begin(with: lock) { return held }
                        lock.unlock()
                        continue
                    }
                    pending = PendingLock(lock: lock, onGranted: changes.ring)
                }
                // A takeover held up by a holder frozen inside a write transaction is carried
                // through once it can be, even if the thawed holder beats again meanwhile: it
                // was silent for a term, and its next write fails its fence.
                if let decided = pursuing, decided.observation.generation != generation { pursuing = nil }
                let observation = pursuing?.observation ?? observeHolder(generation: generation)
                let decision =
                    pursuing.map { TakeoverWatch.Decision.takeOver(silentNanos: $0.silentNanos) }
                    ?? watch.observe(observation)
                switch decision {
                case .wait(let until):
                    wait = .nanoseconds(Int64(until &- min(until, observation.now)))
                case .takeOver(let silent):
                    let pursued = pursuing != nil
                    pursuing = nil
                    switch try takeOver(observation, silentNanos: silent, pursued: pursued) {
                    case .taken(let held):
                        return held
                    case .moved:
                        // Somebody else moved first; look again shortly (a new beat is coming).
                        wait = .milliseconds(20)
                    case .blocked(let reason):
                        pursuing = (observation, silent)
                        if blocked != reason {
                            blocked = reason
                            onBlocked(reason)
                        }
                        wait = term / 4
                    }
                }
            } else {
                // Holding back for a higher priority: no kernel wait, and no takeover either.
                pending?.abandon()
                pending = nil
                wait = interval
            }
            if let deadline, ContinuousClock.now >= deadline {
                throw CoordinatorError(.leaseTimeout, "the writer lease was not free in time")
            }
            var timeout = wait ?? term / 4
            if let deadline { timeout = min(timeout, deadline - ContinuousClock.now) }
            await changes.wait(after: seen, timeout: max(timeout, .milliseconds(1)))
        }
    }

    /// What a waiter sees of the holder now.
    private func observeHolder(generation: FileIdentity?) -> TakeoverWatch.Observation {
        let content = FileLock.recorded(at: directory.writerLockPath) ?? ""
        let record = HeartbeatRecord(parsing: content)
        return TakeoverWatch.Observation(
            generation: generation, record: record, content: content,
            holderState: record.map { ProcessState.of($0.pid) } ?? .unknown, now: MonotonicClock.nanos())
    }

    enum TakeoverOutcome {
        case taken(Held)
        /// The lease moved meanwhile (released, or taken by someone else): look again.
        case moved
        case blocked(Blocked)
    }

    /// Takes the lease over from a silent holder: a fresh lock file, locked, then one store
    /// transaction that checks the epoch, records the next one and renames the file into place.
    ///
    /// - Parameter pursued: a takeover decided earlier and held up by the holder's open write
    ///   transaction: the thawed holder may have beaten since (it was silent for a term, and its
    ///   next write fails its fence), but it must still be the same holding, not let go.
    private func takeOver(
        _ seen: TakeoverWatch.Observation, silentNanos: UInt64, pursued: Bool
    ) throws -> TakeoverOutcome {
        let (storeEpoch, history) = try store.read { reader in
            (try reader.leaseEpoch(), try reader.openLeaseRecord())
        }
        // The record names the epoch its holder took; one above the store's is a holder that had
        // not written yet (its fence can never record now).
        let heldEpoch = seen.record?.epoch ?? storeEpoch
        let holder = heldEpoch == storeEpoch ? history : nil
        let holderPid = seen.record?.pid ?? holder?.pid
        let holderName = holder?.name ?? holderPid.map { "pid \($0)" } ?? "the holder"
        let suffix = temporaryFiles.wrappingAdd(1, ordering: .relaxed).oldValue
        let fresh = try FileLock(path: directory.path + "/.writer.lock.\(getpid()).\(suffix)")
        let target = directory.writerLockPath
        /// Unlocks the fresh file, deleting it unless it was put in place.
        func discard() {
            if fresh.path != target { unlink(fresh.path) }
            fresh.unlock()
        }
        guard try fresh.tryLock() else {
            discard()
            return .moved
        }
        let epoch = max(storeEpoch, heldEpoch) + 1
        // An earlier interval the silent holder never recorded the end of (it took the lease,
        // then froze before its first write) ends as its record says.
        let closing = seen.record?.closing(of: storeEpoch)
        // The fresh file names the epoch it takes over, so the old holder, woken by the rename
        // (which comes before the commit), tells it from a deleted lock file.
        heartbeat.hold(fresh, epoch: epoch, takenOver: heldEpoch)
        do {
            let acquired = try store.takeOverLease(
                from: storeEpoch, epoch: epoch, closing: closing, name: name, pid: getpid(),
                deadline: ContinuousClock.now + takeoverLockWait
            ) {
                // The holder still looks as it did: same file, same record (it neither beat nor
                // let go since; pursued, the same holding, not let go), so nobody took over or was
                // granted the lock first.
                let now = FileLock.recorded(at: target) ?? ""
                let same: Bool
                if pursued, let record = HeartbeatRecord(parsing: now), let before = seen.record {
                    same = record.pid == before.pid && record.epoch == before.epoch && record.released == 0
                } else {
                    same = now == seen.content
                }
                guard FileIdentity.of(target) == seen.generation, same else {
                    throw StoreError(.staleEpoch, "the lock file changed meanwhile")
                }
                try fresh.rename(to: target)
            }
            guard let acquired else {
                heartbeat.drop()
                discard()
                return .moved
            }
            let takeover = Takeover(
                epoch: heldEpoch, name: holder?.name, pid: holderPid, holderState: seen.holderState,
                silentMillis: Double(silentNanos / 100_000) / 10)
            let fence = LeaseFence(
                epoch: epoch, holder: name, pid: getpid(), granted: acquired, previous: storeEpoch,
                closing: nil, recorded: true, stillHeld: { fresh.isStillAtPath })
            return .taken(adopt(Held(fence: fence, takeover: takeover), fresh))
        } catch let error as StoreError where error.code == .busy {
            heartbeat.drop()
            discard()
            let pid = holderPid ?? 0
            let state = ProcessState.of(pid)
            let message: String
            switch state {
            case .stopped:
                message =
                    "\(holderName) (pid \(pid)) is stopped inside a write transaction; resume it (kill -CONT \(pid)) or kill it"
            case .hung:
                message =
                    "\(holderName) (pid \(pid)) is hung inside a write transaction (uninterruptible sleep); resume or kill it"
            default:
                message =
                    "\(holderName) (pid \(pid)) has not renewed the writer lease for a full term and another process holds the store's write lock; the takeover waits for that lock"
            }
            return .blocked(
                Blocked(name: holder?.name ?? holderName, pid: pid, holderState: state, message: message))
        } catch let error as StoreError where error.code == .staleEpoch {
            heartbeat.drop()
            discard()
            return .moved
        } catch {
            heartbeat.drop()
            discard()
            throw error
        }
    }

    /// Writes the release time into the lock file (the next holder's first write records it)
    /// and unlocks (closing the descriptor, which wakes the waiters); does nothing unless
    /// `held` is the current holding. Writes nothing to the store.
    ///
    /// - Parameter recordRelease: false when the lease was lost (taken over): the interval is
    ///   the taker's to close, and the lock file is no longer this holder's to write.
    public func release(_ held: Held, recordRelease: Bool = true) {
        let lock = state.withLock { state -> FileLock? in
            guard state.held == held else { return nil }
            defer { state = (nil, nil) }
            return state.lock
        }
        guard let lock else { return }
        heartbeat.drop(released: recordRelease && lock.isStillAtPath ? WallClock.nowMillis() : nil)
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
            let holder = (try? LeaseHistory.holder(store: store, directory: directory)) ?? nil
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

/// One wait for an exclusive `flock` in the kernel on one generation of the lock file, on a
/// thread of its own (a blocked `flock` cannot be interrupted from Swift), so the waiter is woken
/// the moment the lock is free. Abandoned (cancelled, timed out, or the lock file replaced by a
/// takeover), the thread, once granted the lock, gives it straight back.
final class PendingLock: Sendable {
    /// The lock file this wait is on.
    let generation: FileIdentity?
    private let state = Mutex<(result: Result<FileLock, any Error>?, abandoned: Bool)>((nil, false))

    /// Starts waiting for `lock`; `onGranted` is called (on the waiting thread) when the wait ends.
    init(lock: FileLock, onGranted: @escaping @Sendable () -> Void) {
        generation = lock.identity
        let thread = Thread { [self] in
            let result = Result { try lock.lock() }.map { lock }
            let keep = self.state.withLock { state -> Bool in
                if state.abandoned { return false }
                state.result = result
                return true
            }
            if keep { onGranted() } else { lock.unlock() }
        }
        thread.name = "baton.lease.wait"
        thread.start()
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
            return try? state.result?.get()
        }
        granted?.unlock()
    }
}

/// Wakes a waiting acquisition: when a participant publishes its state, when `D/writer.lock` is
/// replaced or deleted (a takeover: the waits on the old generation are moot), when the kernel
/// grants the lock, when `wait` times out, or when the task is cancelled.
final class LeaseChanges: Sendable {
    private let state = Mutex<(rings: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))
    private let listener = Mutex<Task<Void, Never>?>(nil)

    init(directory: SharedDirectory) {
        guard
            let events = try? DirectoryWatcher(
                root: directory.path, subdirectories: ["participants"], rootNamesOnly: true
            ).events()
        else { return }
        let lockPath = directory.writerLockPath
        let task = Task { [self] in
            // Only a new generation of the lock file matters (a takeover, a deletion): every
            // process that opens and closes it makes an event too.
            var generation = FileIdentity.of(lockPath)
            for await event in events {
                if case .changed(let sub, let name) = event {
                    if sub == "" {
                        guard name == "writer.lock" else { continue }
                        let now = FileIdentity.of(lockPath)
                        guard now != generation else { continue }
                        generation = now
                    } else if !ParticipantStatus.isStatusFile(name, in: directory) {
                        // Junk in participants/ never wakes a waiter.
                        continue
                    }
                }
                ring()
            }
        }
        listener.withLock { $0 = task }
    }

    func stop() {
        listener.withLock { $0?.cancel() }
    }

    @Sendable func ring() {
        let waiters = state.withLock { state in
            state.rings += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Changes seen so far.
    var rings: Int { state.withLock { $0.rings } }

    /// Returns once there were more than `seen` changes, after `timeout`, or on cancellation,
    /// whichever comes first.
    func wait(after seen: Int, timeout: Duration) async {
        // A dispatch timer, not a sleeping task: every contended turn of the lease waits once,
        // and a task would cost two more jobs on the cooperative pool (its start, and its wake-up
        // when cancelled).
        let timer = DispatchWorkItem { [self] in ring() }
        let (seconds, attoseconds) = timeout.components
        let nanos = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanos)), execute: timer)
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.rings != seen { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }
}
