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
    typealias Job = ManagerStateMachine.Job

    /// The store the manager's syncs read and write.
    public nonisolated let store: SharedStore
    let factory: any SyncTargetFactory
    let logger: Logger
    /// Test hooks (nil in production).
    let hooks: SyncHooks?
    /// What every write goes through: the writer lease held now (fenced), an unfenced handle (a
    /// store only this process writes), or nil (not the writer: every write fails).
    var writeAccess: WriteAccess?
    /// Added to "not accepting" errors, e.g. who the writer is.
    var notAcceptingHint: String?
    /// The rules: state, queue, the job the run loop holds, cancels, status changes not yet
    /// written. Only ``carryOut(_:)`` acts on what it says.
    var machine = ManagerStateMachine(concurrency: SyncManager.defaultConcurrency)
    /// What the jobs the machine holds carry that is no value, by job id.
    var jobs: [ManagerStateMachine.JobID: JobHandles] = [:]
    /// Calls waiting for a sync's job to end, or for the manager to stop.
    var waiters = Waiters()
    /// Who hears of every persisted change and every sync set aside.
    var listeners = Listeners()
    /// Where page saves run, and the flag that ends the one running early.
    var pageSaves = PageSaves()
    /// What wakes ``run()``'s loops.
    nonisolated let wakeups = Wakeups()

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
    }

    // MARK: - Running

    /// Runs queued syncs one at a time until cancelled, and writes again the status changes
    /// that could not be written. Call once per manager.
    ///
    /// - Throws: `SyncError` with code `alreadyRunning` when called twice.
    public func run() async throws {
        guard !machine.handle(.runStarted).contains(.refuseRun) else {
            throw SyncError(.alreadyRunning, "SyncManager.run() is already running")
        }
        defer {
            _ = machine.handle(.runEnded)
            listeners.finish()
        }
        let wakeups = self.wakeups
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.retryKeptChanges() }
                await runJobs()
                group.cancelAll()
            }
        } onCancel: {
            wakeups.finish()
        }
    }

    /// Every persisted change of every sync, as it happens.
    public func updates() -> AsyncStream<SyncState> {
        listeners.updates.subscribe()
    }

    /// Every sync set aside from now on (a `SyncState` cannot be built from its row, so
    /// ``updates()`` cannot tell of it): a participant retries a configured one, whose repaired
    /// row then runs.
    public func setAsideSyncs() -> AsyncStream<SetAsideSync> {
        listeners.setAsides.subscribe()
    }

    /// Sets a function called synchronously with every persisted state, in the order the states
    /// were persisted and before the manager goes on (``updates()`` is asynchronous, so a reader
    /// of it may hear of a state after later work already happened). Keep it short: a log line.
    public func setObserver(_ observer: (@Sendable (SyncState) -> Void)?) {
        listeners.observer = observer
    }

    // MARK: - Stop and restart

    /// Asks every running or queued sync to stop. Running syncs stop at their next check (an
    /// HTTP request in flight is cancelled) and report `stopped`; queued ones become `stopped`
    /// without running, once the running one has; clean resync ghosts reports a failure. New
    /// calls fail until ``restart(restartStoppedSyncs:onUpdate:)``.
    ///
    /// It never waits for the store: the queued syncs' `stopped` is written by the run loop,
    /// so a stop is carried out at once even while another process holds SQLite's lock.
    public func stop() {
        carryOutAtOnce(machine.handle(.stop))
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
        await withCheckedContinuation { waiters.stop.append($0) }
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
        while machine.handle(.restart).contains(.waitForStop) {
            await waitUntilStopped()
        }
        notAcceptingHint = nil
        guard restartStoppedSyncs else { return [] }
        var restarted: [SyncState] = []
        for stored in try StoredSync.all(store, status: .stopped) where !machine.isActive(stored.id) {
            switch stored {
            case .readable(let sync): restarted.append(try await reSync(id: sync.id, onUpdate: onUpdate))
            // One this version cannot run stops no other: it is set aside (`failed`, with why).
            case .unreadable(let sync): await setAside(sync)
            }
        }
        return restarted
    }

    /// Sets what every write goes through: the coordinator gives the lease's fence after taking
    /// it, and nil before it lets go. Status changes not yet written under the previous access
    /// are left to the next holder's recovery.
    ///
    /// - Precondition: `access` writes to this manager's store.
    public func setWriteAccess(_ access: WriteAccess?) {
        precondition(access == nil || access?.store === store, "the write access is for another store")
        if access != writeAccess { carryOutAtOnce(machine.handle(.accessChanged)) }
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
    public var unpersistedSyncIds: [Int64] { machine.kept.keys.sorted() }

    /// Sets the hint added to "not accepting" errors (e.g. the current writer's name).
    public func setNotAcceptingHint(_ hint: String?) {
        notAcceptingHint = hint
    }

    /// Turns syncs left `running` by a dead process into `stopped`: nobody else can be running
    /// them while `access` (the writer lease's fence) holds. Does nothing while this manager
    /// holds a job.
    ///
    /// - Returns: the ids it recovered.
    /// - Throws: `staleEpoch` when the lease moved on; `StoreError` on a failed write.
    @discardableResult
    public func recoverInterruptedSyncs(under access: WriteAccess) async throws -> [Int64] {
        precondition(access.store === store, "the write access is for another store")
        guard machine.isIdle else { return [] }
        let ids = try await recoverInterrupted(through: access)
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
        if !machine.isActive(id) { return stateForWaiters(id) }
        return await withCheckedContinuation { waiters.syncs[id, default: []].append($0) }
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
        guard !machine.isActive(id) else {
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
        carryOutAtOnce(machine.handle(.cancel(syncId: id)))
    }

    // MARK: - Helpers

    func requireAccepting(_ what: String) throws {
        if let state = machine.refusal {
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
        if machine.mustStop(id) || Task.isCancelled { throw SyncInterrupted() }
    }

    /// A stop, a cancel, or the lease moving on (a write failed its fence: another process took
    /// the lease over): the sync ends `stopped`, resumable by whoever writes next.
    func isInterruption(_ error: any Error, syncId: Int64) -> Bool {
        error is SyncInterrupted || error is CancellationError || machine.mustStop(syncId)
            || Task.isCancelled || (error as? StoreError)?.code == .staleEpoch
    }

    /// Persists a running sync's progress through the current access (fenced by the lease) and
    /// tells listeners. Its status does not change (``changeStatus(_:onUpdate:)`` changes it).
    func persist(_ state: SyncState, onUpdate: SyncUpdateBlock?) async throws {
        try await writeState(state, through: writer())
        notify(state, onUpdate: onUpdate)
    }

    /// Saves a running sync's progress, telling no one.
    func writeState(_ state: SyncState, through access: WriteAccess) async throws {
        let row = state.row
        try await access.write { try $0.updateSyncState(row) }
    }

    /// Tells the observer, ``updates()`` and the job's listener of a persisted state; a listener
    /// that answers `.cancel` cancels the sync.
    func notify(_ state: SyncState, onUpdate: SyncUpdateBlock?) {
        listeners.observer?(state)
        listeners.updates.send(state)
        if let onUpdate, onUpdate(state) == .cancel {
            carryOutAtOnce(machine.handle(.listenerCancelled(syncId: state.id)))
        }
    }
}
