import BatonLocking
import BatonStore
import Foundation
import Logging
import Synchronization

/// The writer lease: an exclusive `flock` on `D/writer.lock` (its own descriptor, `O_CLOEXEC`,
/// held for the whole lease, never the database file), renewed by a heartbeat written into the
/// lock file every quarter term, and recorded in the store's lease history by the holder's
/// first write (see `LeaseFence` in BatonStore).
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
        /// What this holding's writes go through: `store.write(held.fence) { ... }`.
        public let fence: LeaseFence
        /// Set when this holding took the lease over from a holder that stopped renewing it.
        public let takeover: Takeover?

        /// The epoch every write of this holder is fenced by.
        public var epoch: Int64 { fence.epoch }
        /// When it was taken (ms since 1970).
        public var acquired: Int64 { fence.acquired }
        /// The write access this holding grants.
        public var access: WriteAccess { .lease(fence) }

        package init(fence: LeaseFence, takeover: Takeover? = nil) {
            self.fence = fence
            self.takeover = takeover
        }
    }

    let directory: SharedDirectory
    let store: SharedStore
    let name: String
    /// How long a holder may go without renewing before a waiter takes the lease over.
    public let term: Duration
    /// How long a wait goes before it first looks at the holder's heartbeat (a quarter term when
    /// that is shorter). A takeover counts the holder's silence from its last beat, so looking
    /// later delays one only when the holder was silent for a whole term already, or is seen
    /// stopped: by at most this.
    static let firstLook: Duration = .milliseconds(20)
    /// How long a takeover waits for SQLite's write lock before it says the holder is blocking.
    let takeoverLockWait: Duration
    /// What a wait does about a holder frozen inside a write transaction.
    public let frozenHolder: FrozenHolder
    /// Renews the lease while held (one thread for the lease's whole life).
    let heartbeat: LeaseHeartbeat
    /// The lease this process holds, if any, and the descriptor holding the lock: taking it
    /// twice returns the same epoch, and only the current holding can be released.
    private let state = Locked<(held: Held?, lock: FileLock?)>((nil, nil))
    let temporaryFiles = Atomic<Int>(0)
    /// Set when a holding found the store's epoch at or above the one the lock file's record
    /// gave it: the next holding reads the store's epoch when granted.
    private let readsStoreEpoch = Atomic<Bool>(false)
    /// Where a task taking turns of this lease runs to wait for a contended lease on the thread
    /// that then runs its turn: `withTaskExecutorPreference(lease.executor) { ... }`. The kernel's
    /// grant then wakes the turn's own thread; elsewhere a thread of its own waits for the grant
    /// and wakes the task in the cooperative pool (one more thread switch per hand-over).
    public let executor = LeaseExecutor()
    /// What wakes a waiting acquisition, set up by the first wait and kept for the lease's life
    /// (a contended turn of the lease sets nothing up).
    private let changes = Locked<LeaseChanges?>(nil)

    func watchChanges() -> LeaseChanges {
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
    ///   - directory: the shared directory whose `writer.lock` the lease locks.
    ///   - store: the store in `directory`, whose lease history records the holdings and whose
    ///     epoch fences their writes.
    ///   - name: the participant's name, recorded as the holder of each epoch it takes.
    ///   - term: the lease term: the holder renews every quarter of it, and a holder silent for
    ///     a whole term is taken over.
    ///   - takeoverLockWait: how long a takeover waits for SQLite's write lock before it reports
    ///     the silent holder as blocking it.
    ///   - frozenHolder: what a wait does about a holder frozen inside a write transaction
    ///     (default: resume it after 2 s; see ``FrozenHolder``).
    ///   - onLost: called (on the heartbeat's thread) when the held lock file was replaced or
    ///     deleted: the lease was taken over, or can no longer be trusted.
    public init(
        directory: SharedDirectory, store: SharedStore, name: String, term: Duration = .seconds(2),
        takeoverLockWait: Duration = .milliseconds(250), frozenHolder: FrozenHolder = .standard,
        onLost: @escaping @Sendable () -> Void = {}
    ) throws {
        self.frozenHolder = frozenHolder
        self.directory = directory
        self.store = store
        self.name = name
        self.term = term
        self.takeoverLockWait = takeoverLockWait
        self.heartbeat = LeaseHeartbeat(term: term, onLost: onLost)
        // Fail early (and clearly) when the lock file cannot be opened.
        _ = try FileLock(path: directory.writerLockPath, in: directory)
    }

    deinit {
        executor.shutDown()
        heartbeat.close()
        changes.withLock { $0?.stop() }
    }

    /// Takes the lease if it is free right now.
    ///
    /// - Returns: the held lease, or `nil` when someone else holds it.
    public func tryAcquire() throws -> Held? {
        if let held = current { return held }
        let lock = try FileLock(path: directory.writerLockPath, in: directory)
        guard try lock.tryLock() else { return nil }
        guard lock.isStillAtPath else {
            lock.unlock()
            return nil
        }
        return try begin(with: lock)
    }

    /// Starts a holding on a lock just taken, and beats from the start. Nothing is written to
    /// the store: the holding's first write records it.
    ///
    /// The epoch is one above the one the lock file's record names: every holder writes its
    /// epoch there when it takes the lock, so that is the highest taken while the lock was passed
    /// on, recorded in the store or not (an epoch a holder took without writing is never reused).
    /// The first write then finds the store's epoch in its own transaction, where it must be
    /// below. With no record (a new or replaced lock file), or after a store epoch was found at
    /// or above the record's, the store's epoch is read here.
    func begin(with lock: FileLock) throws -> Held {
        // Read what the last holder left before the first beat overwrites it.
        let last = lock.withRecordedBytes { HeartbeatRecord(parsing: $0) }
        let epoch: Int64
        let closing: LeaseClosing?
        let fence: LeaseFence
        if let last, !readsStoreEpoch.load(ordering: .relaxed) {
            epoch = last.epoch + 1
            // What a holding that never writes passes on, if the last holder wrote (the usual
            // case); a release corrects it when the last holder had not.
            closing = last.closing(of: last.epoch)
            fence = LeaseFence(
                store: store, epoch: epoch, holder: name, pid: getpid(), granted: WallClock.nowMillis(),
                closing: closing, closingOf: { last.closing(of: $0) }, stillHeld: { lock.isStillAtPath })
        } else {
            let storeEpoch: Int64
            do {
                // On the write connection, which the holding's first write then finds current.
                storeEpoch = try store.leaseEpochForWriting()
            } catch {
                lock.unlock()
                throw error
            }
            readsStoreEpoch.store(false, ordering: .relaxed)
            epoch = max(storeEpoch, last?.epoch ?? 0) + 1
            closing = last?.closing(of: storeEpoch)
            fence = LeaseFence(
                store: store, epoch: epoch, holder: name, pid: getpid(), granted: WallClock.nowMillis(),
                previous: storeEpoch, closing: closing, stillHeld: { lock.isStillAtPath })
        }
        heartbeat.hold(lock, epoch: epoch, closing: closing)
        return adopt(Held(fence: fence, takeover: nil), lock)
    }

    func adopt(_ held: Held, _ lock: FileLock) -> Held {
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
    /// The rules are `AcquireMachine`'s; this loop carries out its actions (`AcquireRun`) and
    /// feeds back what came of each.
    ///
    /// - Parameters:
    ///   - deadline: when to give up waiting (`leaseTimeout`); nil waits forever.
    ///   - interval: while `mayTry` says no, the longest the wait goes before asking it again.
    ///   - mayTry: whether this process may try for the lease now (false holds back for a
    ///     participant of higher priority).
    ///   - onBlocked: told when a takeover is held up by a holder that keeps SQLite's write lock
    ///     (frozen inside a write transaction), and told nil once that is over.
    /// - Returns: the held lease (the current holding when this process already holds it).
    /// - Throws: `CancellationError` when the task is cancelled, `leaseTimeout` past the deadline.
    public func acquire(
        deadline: ContinuousClock.Instant? = nil, interval: Duration = .milliseconds(100),
        mayTry: @Sendable () -> Bool = { true },
        onBlocked: @Sendable (Blocked?) -> Void = { _ in }
    ) async throws -> Held {
        if let held = current { return held }
        var machine = AcquireMachine(
            now: MonotonicClock.nanos(), term: term, firstLook: Self.firstLook, interval: interval,
            deadline: deadline, frozenHolder: frozenHolder)
        var run = AcquireRun(lease: self)
        var action = machine.asked
        while true {
            if case .finish(let ending) = action { return try run.end(ending) }
            let event: AcquireMachine.Event
            do {
                event = try await run.carryOut(action, mayTry: mayTry, onBlocked: onBlocked)
            } catch {
                run.failure = error
                event = .failed
            }
            action = machine.handle(event)
        }
    }

    /// Writes the release time into the lock file (the next holder's first write records it)
    /// and unlocks (closing the descriptor, which wakes the waiters); does nothing unless
    /// `held` is the current holding. Writes nothing to the store.
    ///
    /// - Parameters:
    ///   - held: the holding to release (from ``acquire(deadline:interval:mayTry:onBlocked:)`` or
    ///     ``tryAcquire()``).
    ///   - recordRelease: false when the lease was lost (taken over): the interval is the
    ///     taker's to close, and the lock file is no longer this holder's to write.
    public func release(_ held: Held, recordRelease: Bool = true) {
        let lock = state.withLock { state -> FileLock? in
            guard state.held == held else { return nil }
            defer { state = (nil, nil) }
            return state.lock
        }
        guard let lock else { return }
        // A holding that never wrote passes on how the interval before it ends: as the lock
        // file's record told it, for the store's epoch, which it never had to read.
        var passing: LeaseClosing?? = nil
        if recordRelease, !held.fence.isRecorded, held.fence.previous == nil,
            // Unreadable, the store's epoch passes nothing on: the record keeps the granted closing.
            let storeEpoch = try? store.leaseEpochForWriting()
        {
            passing = .some(held.fence.closing(of: storeEpoch))
            if storeEpoch >= held.epoch { readsStoreEpoch.store(true, ordering: .relaxed) }
        }
        // Into the file this lock holds: when a takeover replaced it, nobody reads it any more.
        heartbeat.drop(released: recordRelease ? WallClock.nowMillis() : nil, passing: passing)
        lock.unlock()
        // Checkpoints held back while the lease was held run now, while nobody waits for them
        // (not even this release).
        store.releaseCheckpointsAfterwards()
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
        } catch let timedOut as CoordinatorError where timedOut.code == .leaseTimeout {
            let holder: (name: String?, pid: Int32)?
            do {
                holder = try LeaseHistory.holder(store: store, directory: directory)
            } catch {
                // The store cannot be read: the holder goes unnamed, and the plain timeout stands.
                throw timedOut
            }
            let participant = holder.flatMap { holder in
                ParticipantStatus.readAll(in: directory).first { $0.pid == holder.pid && $0.isAlive }
            }
            throw CoordinatorError(
                .leaseTimeout,
                Self.timeoutMessage(
                    holder: holder, participant: participant, directory: directory.path, timeout: timeout))
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

extension WriterLease {
    /// Why the lease was not free in time, naming its holder and what to do about it: a
    /// participant in the foreground is sent to the background by name (`baton signal --dir D
    /// host background`); one in the background is handing the lease over already; a holder that
    /// is no participant (a tool, an app's own lease) is waited for.
    ///
    /// - Parameters:
    ///   - holder: who the lock file says holds the lease (nil: nobody alive does any more), with
    ///     its name from the lease history (nil: the holding has not written yet).
    ///   - participant: the holder's published status, when it is a live participant.
    ///   - directory: the shared directory's path, for the command in the hint.
    ///   - timeout: how long the wait lasted (nil: until it was given up).
    static func timeoutMessage(
        holder: (name: String?, pid: Int32)?, participant: ParticipantStatus?, directory: String,
        timeout: Duration?
    ) -> String {
        let within = timeout.map { "within \($0)" } ?? "in time"
        guard let holder else {
            return
                "the writer lease was not free \(within), and its holder has gone since; try again, or wait longer with --timeout"
        }
        guard let participant else {
            let who = holder.name.map { "'\($0)' (pid \(holder.pid))" } ?? "pid \(holder.pid)"
            return
                "the writer lease is held by \(who), which is not a participant, and was not free \(within); wait for it to finish, or wait longer with --timeout"
        }
        let held = "the writer lease is held by participant '\(participant.name)' (pid \(participant.pid))"
        if participant.lifecycle == .background {
            return
                "\(held), which is in the background and handing the lease over, and was not free \(within); wait longer with --timeout"
        }
        return
            "\(held) and was not free \(within); send it to the background (baton signal --dir \(directory) \(participant.name) background) or wait longer with --timeout"
    }
}
