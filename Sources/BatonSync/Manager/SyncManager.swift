import BatonStore
import Foundation
import Logging

/// Mobile Sync's sync manager with the 7.1 stop/restart API, over a shared store.
///
/// Syncs run one at a time in submission order, inside ``run()``, which the owner keeps running
/// (in a task group or a service) and cancels to shut down. `syncDown`, `syncUp` and `reSync`
/// return at once with the sync `running` (queued syncs count as running); listeners and
/// ``updates()`` hear every persisted change; ``waitForSync(id:)`` awaits the end of a run.
///
/// ```swift
/// let manager = SyncManager(store: store, targetFactory: RESTTargetFactory(client: client))
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await manager.run() }
///     let held = try await lease.acquire()
///     await manager.setWriteAccess(.lease(held.fence))
///     let sync = try await manager.syncDown(target: target, soupName: "accounts", name: "accounts")
///     let final = await manager.waitForSync(id: sync.id)
///     group.cancelAll()
/// }
/// ```
///
/// A `Participant` (BatonCoordinator) does the lease part: it gives the manager the lease's
/// fence when it becomes the writer and takes it back before it lets go. Until it has one, every
/// write fails and the manager accepts no sync.
public actor SyncManager {
    struct Job: Sendable {
        enum Kind: Sendable {
            /// Run a sync down or up (a sync down resumes where its position says).
            case run
            case cleanGhosts(CheckedContinuation<Int, any Error>)
        }

        var syncId: Int64
        /// The sync's name when it was queued: it names the sync in a failure if its row cannot
        /// be read when the job runs.
        var name: String?
        var kind: Kind
        var onUpdate: SyncUpdateBlock?
    }

    /// The store the manager's syncs read and write.
    public nonisolated let store: SharedStore
    let factory: any SyncTargetFactory
    let logger: Logger
    var machine = ManagerStateMachine()
    /// What every write goes through: the writer lease held now (fenced), an unfenced handle (a
    /// store only this process writes), or nil (not the writer: every write fails).
    var writeAccess: WriteAccess?
    /// Test hooks (nil in production).
    let hooks: SyncHooks?
    /// Added to "not accepting" errors, e.g. who the writer is.
    var notAcceptingHint: String?
    var queue: [Job] = []
    var current: (job: Job, task: Task<SyncState?, Never>)?
    var cancelRequested: Set<Int64> = []
    var syncWaiters: [Int64: [CheckedContinuation<SyncState?, Never>]] = [:]
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
    var isRunning = false
    /// Final states (`done`, `failed`, `stopped`) that could not be persisted, by sync id; a
    /// background task keeps trying (see ``persistFinal(_:onUpdate:)``).
    var unpersistedFinals: [Int64: SyncState] = [:]
    /// The errors of syncs set aside whose `failed` could not be persisted, by sync id; the same
    /// task keeps trying (see ``setAside(id:name:cause:unchanged:)``).
    var unpersistedSetAsides: [Int64: String] = [:]
    var finalsFlusher: Task<Void, Never>?
    /// Called with every persisted state, in order, before ``updates()`` hears of it.
    var observer: (@Sendable (SyncState) -> Void)?
    /// Batches of queued syncs a stop is still marking `stopped` (they count as active work).
    var finishingQueued = 0
    /// Raised by ``endPageSaveEarly()`` to end the page being saved at its next record.
    var pageSaveCut: StopFlag?
    /// Where page saves run: a thread outside Swift's cooperative pool, which a save of a few
    /// milliseconds would otherwise hold from the work that reacts to a stop.
    nonisolated let saveQueue = DispatchQueue(label: "baton.sync.page-save")
    let broadcaster = Broadcaster<SyncState>(buffering: 1024)
    let setAsides = Broadcaster<SetAsideSync>(buffering: 256)
    nonisolated let wakeups: AsyncStream<Void>
    nonisolated let wake: AsyncStream<Void>.Continuation

    /// A manager for `store` that rebuilds targets with `targetFactory`. It may not write (and
    /// accepts no sync) until it is given the writer lease's fence with ``setWriteAccess(_:)``.
    public init(
        store: SharedStore, targetFactory: any SyncTargetFactory, logger: Logger = Logger(label: "baton.sync")
    ) {
        self.init(store: store, access: nil, targetFactory: targetFactory, hooks: nil, logger: logger)
    }

    /// A manager that writes outside the lease through `unfenced`: for a store only this
    /// process writes (a tool, a benchmark, a single-process app).
    public init(
        unfenced: UnfencedStore, targetFactory: any SyncTargetFactory,
        logger: Logger = Logger(label: "baton.sync")
    ) {
        self.init(
            store: unfenced.store, access: unfenced.access, targetFactory: targetFactory, hooks: nil,
            logger: logger)
    }

    /// Either of the above, with test hooks.
    package init(
        store: SharedStore, access: WriteAccess?, targetFactory: any SyncTargetFactory, hooks: SyncHooks?,
        logger: Logger
    ) {
        precondition(access == nil || access?.store === store, "the write access is for another store")
        self.store = store
        self.writeAccess = access
        self.hooks = hooks
        self.factory = targetFactory
        self.logger = logger
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: - Running

    /// Runs queued syncs one at a time until cancelled. Call once per manager.
    ///
    /// - Throws: `SyncError` with code `alreadyRunning` when called twice.
    public func run() async throws {
        guard !isRunning else { throw SyncError(.alreadyRunning, "SyncManager.run() is already running") }
        isRunning = true
        defer {
            isRunning = false
            broadcaster.finish()
            setAsides.finish()
        }
        let wake = self.wake
        await withTaskCancellationHandler {
            for await _ in wakeups {
                while !Task.isCancelled, !queue.isEmpty {
                    let job = queue.removeFirst()
                    await execute(job)
                }
            }
        } onCancel: {
            wake.finish()
        }
    }

    func enqueue(_ job: Job) {
        queue.append(job)
        wake.yield()
    }

    func execute(_ job: Job) async {
        let task = Task { await self.perform(job) }
        current = (job, task)
        let final = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        current = nil
        resumeSyncWaiters(job.syncId, final ?? stateForWaiters(job.syncId))
        _ = machine.taskEnded(remaining: queue.count + finishingQueued)
        resumeStopWaitersIfStopped()
    }

    /// Every persisted change of every sync, as it happens.
    public func updates() -> AsyncStream<SyncState> {
        broadcaster.subscribe()
    }

    /// Sets a function called synchronously with every persisted state, in the order the states
    /// were persisted and before the manager goes on (``updates()`` is asynchronous, so a reader
    /// of it may hear of a state after later work already happened). Keep it short: a log line.
    public func setObserver(_ observer: (@Sendable (SyncState) -> Void)?) {
        self.observer = observer
    }

    // MARK: - Stop and restart

    /// Asks every running or queued sync to stop. Running syncs stop at their next check (an
    /// HTTP request in flight is cancelled) and report `stopped`; queued ones become `stopped`
    /// without running; clean resync ghosts reports a failure. New calls fail until ``restart(restartStoppedSyncs:onUpdate:)``.
    ///
    /// It never waits for the store: the queued syncs' `stopped` is written by a task of its
    /// own, so a stop is carried out at once even while another process holds SQLite's lock.
    public func stop() {
        let active = queue.count + (current == nil ? 0 : 1) + finishingQueued
        guard machine.stop(activeTasks: active) == .interruptTasks else {
            resumeStopWaitersIfStopped()
            return
        }
        let queued = queue
        queue.removeAll()
        current?.task.cancel()
        if !queued.isEmpty {
            finishingQueued += 1
            Task { await self.finishQueued(queued) }
        }
        if current == nil, finishingQueued == 0 { _ = machine.taskEnded(remaining: 0) }
        resumeStopWaitersIfStopped()
    }

    func finishQueued(_ jobs: [Job]) async {
        // As Mobile Sync's serial queue: the running sync reports `stopped` before the queued ones.
        if let running = current?.task { _ = await running.value }
        for job in jobs { await finishWithoutRunning(job) }
        finishingQueued -= 1
        if current == nil { _ = machine.taskEnded(remaining: queue.count + finishingQueued) }
        resumeStopWaitersIfStopped()
    }

    /// True when a stop was requested and syncs are still ending.
    public func isStopping() -> Bool { machine.isStopping }

    /// True when a stop was requested and every sync has ended.
    public func isStopped() -> Bool { machine.isStopped }

    /// The manager's state (`accepting_syncs`, `stop_requested`, `stopped`).
    public var state: ManagerStateMachine.State { machine.state }

    /// Returns once the manager is stopped (immediately if it is).
    public func waitUntilStopped() async {
        if machine.isStopped || machine.state == .acceptingSyncs { return }
        await withCheckedContinuation { stopWaiters.append($0) }
    }

    func resumeStopWaitersIfStopped() {
        guard machine.isStopped else { return }
        let waiters = stopWaiters
        stopWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Accepts syncs again. Allowed when stopping (it waits for running syncs to end) or
    /// stopped. With `restartStoppedSyncs`, every stopped sync down and sync up is reSynced in
    /// id order and `onUpdate` hears of them; otherwise they stay stopped for the app to reSync.
    /// A stopped sync this version cannot read is set aside (``setAsideSyncs()``), not restarted.
    ///
    /// - Returns: the syncs it restarted.
    @discardableResult
    public func restart(restartStoppedSyncs: Bool, onUpdate: SyncUpdateBlock? = nil) async throws
        -> [SyncState]
    {
        if machine.restart() == .waitForStop {
            await waitUntilStopped()
            _ = machine.restart()
        }
        notAcceptingHint = nil
        guard restartStoppedSyncs else { return [] }
        var restarted: [SyncState] = []
        for stored in try StoredSync.all(store, status: .stopped) where !isQueuedOrRunning(stored.id) {
            switch stored {
            case .readable(let sync): restarted.append(try await reSync(id: sync.id, onUpdate: onUpdate))
            // One this version cannot run stops no other: it is set aside (`failed`, with why).
            case .unreadable(let sync): await setAside(sync)
            }
        }
        return restarted
    }

    /// Sets what every write goes through: the coordinator gives the lease's fence after taking
    /// it, and nil before it lets go. Final states not yet persisted under the previous access
    /// are left to the next holder's recovery.
    ///
    /// - Precondition: `access` writes to this manager's store.
    public func setWriteAccess(_ access: WriteAccess?) {
        precondition(access == nil || access?.store === store, "the write access is for another store")
        if access != writeAccess {
            unpersistedFinals.removeAll()
            unpersistedSetAsides.removeAll()
        }
        writeAccess = access
    }

    /// What writes go through now (nil: this manager may not write).
    public var access: WriteAccess? { writeAccess }

    /// The access every write goes through now.
    ///
    /// - Throws: `staleEpoch` when this manager may not write (its process does not hold the
    ///   writer lease).
    func writer() throws -> WriteAccess {
        guard let writeAccess else {
            throw StoreError(.staleEpoch, "this process does not hold the writer lease; nothing was written")
        }
        return writeAccess
    }

    /// The sync ids whose final state (`done`, `failed`, `stopped`, or `failed` for a sync set
    /// aside) was reported but could not be persisted yet (a full disk, a lock held elsewhere);
    /// the manager keeps trying.
    public var unpersistedSyncIds: [Int64] {
        Set(unpersistedFinals.keys).union(unpersistedSetAsides.keys).sorted()
    }

    /// Sets the hint added to "not accepting" errors (e.g. the current writer's name).
    public func setNotAcceptingHint(_ hint: String?) {
        notAcceptingHint = hint
    }

    /// Turns syncs left `running` by a dead process into `stopped`: nobody else can be running
    /// them while `access` (the writer lease's fence) holds. Does nothing while this manager
    /// runs a sync.
    ///
    /// - Returns: the ids it recovered.
    /// - Throws: `staleEpoch` when the lease moved on; `StoreError` on a failed write.
    @discardableResult
    public func recoverInterruptedSyncs(under access: WriteAccess) async throws -> [Int64] {
        precondition(access.store === store, "the write access is for another store")
        guard current == nil, queue.isEmpty else { return [] }
        let ids = try await access.write { transaction in
            try transaction.changeSyncStatus(
                from: SyncStatus.running.rawValue, to: SyncStatus.stopped.rawValue)
        }
        if !ids.isEmpty {
            logger.info("recovered interrupted syncs", metadata: ["baton.syncs": "\(ids)"])
            for id in ids {
                do {
                    // A sync that cannot be read (set aside by the restart) or was deleted since
                    // has no state to tell.
                    if case .readable(let state) = try StoredSync.byId(id, store: store) {
                        notify(state, onUpdate: nil)
                    }
                } catch {
                    // The recovery committed; only listeners miss hearing of it.
                    logger.warning(
                        "could not read a recovered sync to tell listeners",
                        metadata: ["baton.sync": "\(id)", "baton.error": "\(error)"])
                }
            }
        }
        return ids
    }

    // MARK: - Waiting and reading

    /// Waits for the sync's queued or running work to end; returns its state then (at once if
    /// nothing is queued or running for it): nil when there is none, or when it cannot be read
    /// (``StoredSync/byId(_:store:)`` says why; a job of it that met it so set it aside).
    public func waitForSync(id: Int64) async -> SyncState? {
        if !isQueuedOrRunning(id) { return stateForWaiters(id) }
        return await withCheckedContinuation { syncWaiters[id, default: []].append($0) }
    }

    func isQueuedOrRunning(_ id: Int64) -> Bool {
        current?.job.syncId == id || queue.contains { $0.syncId == id }
    }

    /// Whether a run of the sync (not a clean resync ghosts of it) is queued or running: a
    /// reSync may queue behind the sync's ghost cleaning, never beside another run.
    func isRunQueuedOrRunning(_ id: Int64) -> Bool {
        func isRun(_ job: Job) -> Bool {
            guard job.syncId == id, case .run = job.kind else { return false }
            return true
        }
        return current.map { isRun($0.job) } == true || queue.contains(where: isRun)
    }

    /// The sync's persisted state for its waiters; nil when there is none to give: deleted, a
    /// row that cannot be read, or a read that failed (logged here).
    func stateForWaiters(_ id: Int64) -> SyncState? {
        do {
            return try SyncState.byId(id, store: store)
        } catch let error as SyncError where error.code == .unreadableSync {
            return nil  // a job that met it logged it and set it aside; a listing shows why
        } catch {
            logger.warning(
                "could not read a sync's state for its waiters; they get nil",
                metadata: ["baton.sync": "\(id)", "baton.error": "\(error)"])
            return nil
        }
    }

    func resumeSyncWaiters(_ id: Int64, _ state: SyncState?) {
        guard !isQueuedOrRunning(id) else { return }
        let waiters = syncWaiters.removeValue(forKey: id) ?? []
        for waiter in waiters { waiter.resume(returning: state) }
    }

    /// The sync's persisted state.
    ///
    /// - Throws: `unreadableSync` naming it when this version cannot read it
    ///   (``StoredSync/byId(_:store:)`` tells what could be read).
    public func getSyncStatus(id: Int64) throws -> SyncState? {
        try SyncState.byId(id, store: store)
    }

    /// The sync's persisted state, by name.
    ///
    /// - Throws: as ``getSyncStatus(id:)``.
    public func getSyncStatus(name: String) throws -> SyncState? {
        try SyncState.byName(name, store: store)
    }

    /// Deletes a sync's state (its records stay in the soup).
    ///
    /// - Throws: `alreadyRunning` while it runs, `unknownSync` when there is none.
    public func deleteSync(id: Int64) async throws {
        guard !isQueuedOrRunning(id) else {
            throw SyncError(.alreadyRunning, "sync \(id) is running; stop it before deleting it")
        }
        let existed = try await writer().write { try $0.deleteSyncState(id: id) }
        guard existed else { throw SyncError(.unknownSync, "no sync with id \(id)") }
    }

    /// Deletes a sync's state by name (one this version cannot read too).
    public func deleteSync(name: String) async throws {
        guard let stored = try StoredSync.byName(name, store: store) else {
            throw SyncError(.unknownSync, "no sync named '\(name)'")
        }
        try await deleteSync(id: stored.id)
    }

    /// Asks one sync to stop at its next check (it becomes `stopped`, resumable); the manager
    /// and other syncs carry on. Does nothing when the sync is not queued or running.
    public func cancelSync(id: Int64) {
        guard isQueuedOrRunning(id) else { return }
        cancelRequested.insert(id)
        if current?.job.syncId == id { current?.task.cancel() }
    }

    // MARK: - Helpers

    func requireAccepting(_ what: String) throws {
        if case .reject(let state) = machine.submit() {
            let hint = notAcceptingHint.map { "; \($0)" } ?? ""
            throw SyncError(
                .notAcceptingSyncs,
                "\(what) refused: the sync manager is \(state.rawValue)\(hint); call restart() (or wait for the writer lease) first"
            )
        }
    }

    /// Throws ``SyncInterrupted`` when the sync must stop here: a stop, a cancel of this sync,
    /// or a cancelled task.
    func checkForStop(_ id: Int64) throws {
        if machine.state != .acceptingSyncs || cancelRequested.contains(id) || Task.isCancelled {
            throw SyncInterrupted()
        }
    }

    /// A stop, a cancel, or the lease moving on (a write failed its fence: another process took
    /// the lease over): the sync ends `stopped`, resumable by whoever writes next.
    func isInterruption(_ error: any Error, syncId: Int64) -> Bool {
        error is SyncInterrupted || error is CancellationError || machine.state != .acceptingSyncs
            || cancelRequested.contains(syncId) || Task.isCancelled
            || (error as? StoreError)?.code == .staleEpoch
    }

    /// Persists a state through the current access (fenced by the lease) and tells listeners.
    func persist(_ state: SyncState, onUpdate: SyncUpdateBlock?) async throws {
        try await writeState(state, through: writer())
        notify(state, onUpdate: onUpdate)
    }

    /// Saves a sync's state, telling no one.
    func writeState(_ state: SyncState, through access: WriteAccess) async throws {
        let row = state.row
        try await access.write { try $0.updateSyncState(row) }
    }

    /// Writes a sync's state in a task of its own: a stop's cancellation does not reach it,
    /// and the manager stays free to take calls (a `stop()`) while the write waits for a lock
    /// held elsewhere.
    func writeUncancelled(_ state: SyncState, through access: WriteAccess) async throws {
        let row = state.row
        try await Task.detached {
            try await access.write { try $0.updateSyncState(row) }
        }.value
    }

    func notify(_ state: SyncState, onUpdate: SyncUpdateBlock?) {
        observer?(state)
        broadcaster.send(state)
        if let onUpdate, onUpdate(state) == .cancel {
            cancelRequested.insert(state.id)
        }
    }

    /// A queued job reached a stop: its sync is `stopped` without running; ghost cleaning fails.
    func finishWithoutRunning(_ job: Job) async {
        switch job.kind {
        case .cleanGhosts(let continuation):
            continuation.resume(
                throwing: SyncError(
                    .ghostCleaningStopped,
                    "clean resync ghosts was stopped before it ran; nothing was deleted"))
        case .run:
            // One that cannot be read is set aside (`failed`, with why) rather than left `running`.
            if var state = await readForRun(job) {
                state.status = .stopped
                state.endTime = WallClock.nowMillis()
                await persistFinal(state, onUpdate: job.onUpdate)
                resumeSyncWaiters(job.syncId, state)
            } else {
                resumeSyncWaiters(job.syncId, nil)
            }
        }
        cancelRequested.remove(job.syncId)
    }
}
