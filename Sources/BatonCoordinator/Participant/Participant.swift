import BatonStore
import BatonSync
import Foundation
import Logging
import ServiceLifecycle

/// One process's member of the shared directory: owns its sync engine, the inotify watcher and
/// the writer lease, and follows its lifecycle signal through ``HandOverStateMachine``.
///
/// Background: `stop()`, wait for `isStopped()` up to the deadline (then interrupt the SQLite
/// statement in flight), passive WAL checkpoint, release, publish. Foreground: publish, take
/// the lease (highest priority first), recover interrupted syncs, `restart(true)`, run the
/// configured syncs. ``run()`` ends after ``shutdown()`` (or a graceful shutdown of the
/// `ServiceGroup` it runs in: SIGTERM/SIGINT) has released everything.
///
/// An app runs it as a service:
///
/// ```swift
/// let participant = try Participant(configuration: ..., directory: shared, store: store,
///                                   manager: manager, logger: logger)
/// let group = ServiceGroup(services: [participant], gracefulShutdownSignals: [.sigterm, .sigint],
///                          logger: logger)
/// try await group.run()
/// ```
public actor Participant: Service {
    enum Event: Sendable {
        case directory(DirectoryWatcher.Event)
        case leaseAcquired(WriterLease.Held)
        case leaseFailed(String)
        /// The held lock file was replaced or deleted (the heartbeat noticed).
        case leaseLost
        /// A takeover waits for a holder that keeps SQLite's write lock (nil: no longer).
        case leaseBlocked(WriterLease.Blocked?)
        case syncUpdate(SyncState)
        case retry(String)
        /// Try again what failed on a storage error: taking the lease, starting syncs as
        /// writer, publishing the status.
        case recover(Recovery)
        case shutdown
    }

    enum Recovery: String, Sendable {
        case lease
        case writerStart = "writer-start"
        case publish
    }

    let configuration: ParticipantConfiguration
    let directory: SharedDirectory
    let store: SharedStore
    let manager: SyncManager
    let lease: WriterLease
    let log: ParticipantLog
    let logger: Logger
    /// `D/participants/<name>.lock`, held for the process's lifetime: one live process per name.
    var nameLock: FileLock
    /// The hand-over policy, and the single truth of whether this process holds the lease
    /// (`machine.held`).
    var machine = HandOverStateMachine()
    var acquiring: Task<Void, Never>?
    var acquireStarted: Double = 0
    var lastLifecycleProblem: String?
    var lastManagerState: ManagerStateMachine.State?
    var hasRun = false
    /// Clean resync ghosts runs queued behind its sync; this awaits its outcome for the log.
    var ghostCleaning: Task<Void, Never>?
    /// Failures in a row of each configured sync, and the retries waiting to fire.
    var failures: [String: Int] = [:]
    var retries: [String: Task<Void, Never>] = [:]
    /// What the status says of each retried sync: the last failure and the next attempt.
    var retryStatus: [String: SyncRetry] = [:]
    /// What keeps this participant from its work now (published in its status), and the
    /// recoveries waiting to fire with their failures in a row.
    var problem: String?
    var recoveries: [Recovery: Task<Void, Never>] = [:]
    var recoveryFailures: [Recovery: Int] = [:]
    /// What holds up a takeover now, if anything.
    var lastBlocked: WriterLease.Blocked?
    /// Local edits waiting for this participant to become the writer, and those running (a
    /// release waits for them: nothing commits after the lease is let go).
    var writerWaiters: [UUID: CheckedContinuation<Void, any Error>] = [:]
    var localWrites = 0
    var localWritesDrained: [CheckedContinuation<Void, Never>] = []
    /// The event loop's input.
    nonisolated let inbox: AsyncStream<Event>
    nonisolated let sink: AsyncStream<Event>.Continuation
    nonisolated let broadcaster = Broadcaster<ParticipantEvent>(buffering: 4096)

    /// What this participant does, as it happens (lease, lifecycle, manager state, syncs,
    /// retries, problems), typed; each access is a subscription of its own, from now on. It
    /// finishes when ``run()`` ends. `D/logs/<name>.jsonl` records the same.
    public nonisolated var events: AsyncStream<ParticipantEvent> { broadcaster.subscribe() }

    public init(
        configuration: ParticipantConfiguration, directory: SharedDirectory, store: SharedStore,
        manager: SyncManager,
        logger: Logger
    ) throws {
        try ParticipantName.validate(configuration.name)
        try directory.ensureSubdirectory(directory.participantsPath)
        nameLock = try Self.claimName(configuration.name, in: directory)
        self.configuration = configuration
        self.directory = directory
        self.store = store
        self.manager = manager
        self.logger = logger
        let (inbox, sink) = AsyncStream.makeStream(of: Event.self)
        (self.inbox, self.sink) = (inbox, sink)
        lease = try WriterLease(
            directory: directory, store: store, name: configuration.name, term: configuration.leaseTerm,
            onLost: { sink.yield(.leaseLost) })
        log = try ParticipantLog(directory: directory, name: configuration.name)
    }

    /// Takes `D/participants/<name>.lock` (freed by the kernel when the process dies) and
    /// records this process's pid in it.
    ///
    /// - Throws: `nameInUse`, naming the pid, when a live process holds the name.
    static func claimName(_ name: String, in directory: SharedDirectory) throws -> FileLock {
        let path = directory.participantsPath + "/\(name).lock"
        let lock = try FileLock(path: path)
        guard try lock.tryLock() else {
            let pid =
                FileLock.recorded(at: path)?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
            throw CoordinatorError(
                .nameInUse,
                "participant '\(name)' is already running (pid \(pid)) in \(directory.path); stop it first or choose another --name"
            )
        }
        lock.record("\(getpid())\n")
        return lock
    }

    /// After a rescan: if `participants/` was deleted or its lock file replaced, takes the name
    /// again (logging when another process got it first) and republishes the status.
    func reclaimNameAndRepublish() {
        if !nameLock.isStillAtPath {
            do {
                try directory.ensureSubdirectory(directory.participantsPath)
                let fresh = try Self.claimName(configuration.name, in: directory)
                nameLock.unlock()
                nameLock = fresh
                log.log("name.reclaimed")
            } catch {
                log.log("name.lost", ["error": .string(String(describing: error))])
                logger.error(
                    "could not take this participant's name again", metadata: ["baton.error": "\(error)"])
            }
        }
        publishOrRetry()
    }

    /// Asks the participant to hand everything back and end ``run()``. Safe from any thread
    /// (a signal handler, for instance).
    public nonisolated func shutdown() {
        sink.yield(.shutdown)
    }

    // MARK: - For the app that embeds it

    /// The app went to the background: the same as `echo background > D/lifecycle/NAME`. The
    /// file stays the cross-process truth, so a shell can still override it.
    public nonisolated func enterBackground() throws {
        try LifecycleSignal.write(.background, directory: directory, name: configuration.name)
    }

    /// The app came to the foreground: the same as `echo foreground > D/lifecycle/NAME`.
    public nonisolated func enterForeground() throws {
        try LifecycleSignal.write(.foreground, directory: directory, name: configuration.name)
    }

    /// Runs `body` in one transaction fenced by the writer lease this participant holds: the
    /// app's own edits, marked with Mobile Sync's local flags (see ``LocalEdits``), sent by the
    /// next sync up.
    ///
    /// - Parameter timeout: nil fails at once unless this participant is the writer; otherwise
    ///   it waits up to `timeout` for it to become the writer (it must be in the foreground).
    /// - Throws: `notWriter`, naming the current writer, when it is not (in time); `leaseLost`
    ///   when the lease was taken over or its lock file went away before the commit (the body
    ///   rolled back whole); the body's own errors (it rolled back too); `StoreError` on a
    ///   failed write.
    public func write<T: Sendable>(
        waitingUpTo timeout: Duration? = nil, _ body: @escaping @Sendable (LocalEdits) throws -> T
    ) async throws -> T {
        if machine.phase != .writer || machine.held == nil {
            guard let timeout else { throw notWriterError() }
            try await waitToBeWriter(timeout: timeout)
        }
        guard let held = machine.held, machine.phase == .writer else { throw notWriterError() }
        localWrites += 1
        defer {
            localWrites -= 1
            if localWrites == 0 {
                for waiter in localWritesDrained { waiter.resume() }
                localWritesDrained = []
            }
        }
        do {
            let result = try await store.write(held.fence) { try body(LocalEdits($0)) }
            record(.localWrite(epoch: held.epoch))
            return result
        } catch let error as StoreError where error.code == .staleEpoch {
            throw CoordinatorError(
                .leaseLost,
                "participant '\(configuration.name)' lost the writer lease (epoch \(held.epoch)) before the edit committed; nothing was written: \(error.message)"
            )
        }
    }

    func notWriterError() -> CoordinatorError {
        CoordinatorError(
            .notWriter,
            "participant '\(configuration.name)' does not hold the writer lease (it is \(machine.phase.rawValue))\(writerHint()); bring it to the foreground, or pass a timeout to wait"
        )
    }

    /// Returns once this participant is the writer; throws `notWriter` past `timeout`.
    func waitToBeWriter(timeout: Duration) async throws {
        let id = UUID()
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.expireWriterWaiter(id)
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            writerWaiters[id] = continuation
        }
    }

    func expireWriterWaiter(_ id: UUID) {
        writerWaiters.removeValue(forKey: id)?.resume(throwing: notWriterError())
    }

    /// Wakes the local edits waiting for the lease (call once the writer's syncs started).
    func resumeWriterWaiters() {
        let waiters = writerWaiters
        writerWaiters = [:]
        for waiter in waiters.values { waiter.resume() }
    }

    /// Returns once no local edit is running (a release calls it before letting go).
    func waitForLocalWrites() async {
        guard localWrites > 0 else { return }
        await withCheckedContinuation { localWritesDrained.append($0) }
    }

    /// Runs until ``shutdown()``, or a graceful shutdown of its service group, completes: the
    /// lease handed back, the status published `finished`.
    ///
    /// - Throws: `CoordinatorError` when the directory cannot be watched; a second call throws.
    public func run() async throws {
        let sink = self.sink
        try await withGracefulShutdownHandler {
            try await runLoop()
        } onGracefulShutdown: {
            sink.yield(.shutdown)
        }
    }

    private func runLoop() async throws {
        guard !hasRun else { throw CoordinatorError(.io, "Participant.run() was already called") }
        hasRun = true
        for sub in [directory.lifecyclePath, directory.participantsPath, directory.logsPath] {
            try directory.ensureSubdirectory(sub)
        }
        if let initial = configuration.initialLifecycle {
            try LifecycleSignal.writeIfAbsent(initial, directory: directory, name: configuration.name)
        }
        // Not the writer yet: the engine refuses syncs until the lease is held.
        await manager.stop()
        await manager.setNotAcceptingHint(
            "participant '\(configuration.name)' does not hold the writer lease\(writerHint())")
        log.log(
            "started",
            [
                "role": .string(configuration.role.rawValue), "priority": .int(Int64(configuration.priority)),
                "pid": .int(Int64(getpid())),
            ])
        try publish()
        let watched = try DirectoryWatcher(
            root: directory.path, subdirectories: ["lifecycle", "participants"]
        ).events()
        let log = self.log
        let broadcaster = self.broadcaster
        await manager.setObserver { Self.record(.sync($0), log: log, broadcaster: broadcaster) }
        let updates = await manager.updates()
        let manager = self.manager
        let sink = self.sink
        let logger = self.logger
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await manager.run()
                } catch {
                    logger.error("the sync manager stopped running", metadata: ["baton.error": "\(error)"])
                }
            }
            group.addTask {
                for await event in watched { sink.yield(.directory(event)) }
            }
            group.addTask {
                for await update in updates { sink.yield(.syncUpdate(update)) }
            }
            sink.yield(.directory(.rescan("start")))
            for await event in inbox {
                if await handle(event) { break }
            }
            acquiring?.cancel()
            await acquiring?.value
            await ghostCleaning?.value
            cancelRetries()
            for task in recoveries.values { task.cancel() }
            recoveries = [:]
            // Local edits still waiting for the lease will not get it from this run.
            for id in Array(writerWaiters.keys) { expireWriterWaiter(id) }
            group.cancelAll()
        }
        let longest = store.longestWriteTransaction
        let longestMs =
            Double(longest.components.seconds) * 1000 + Double(longest.components.attoseconds) / 1e15
        log.log("exited", ["longestTransactionMs": .double((longestMs * 100).rounded() / 100)])
        broadcaster.finish()
    }

    /// Returns true when the loop must end.
    func handle(_ event: Event) async -> Bool {
        switch event {
        case .directory(let change):
            if case .rescan(let reason) = change, reason != "start" {
                logger.warning("rescanning the shared directory", metadata: ["baton.reason": "\(reason)"])
                log.log("rescan", ["reason": .string(reason)])
                reclaimNameAndRepublish()
            }
            if case .changed(let sub, let name) = change {
                switch sub {
                case "lifecycle":
                    if name != configuration.name { return false }
                case "participants":
                    // Junk there costs one stat, never a read of the directory.
                    if !ParticipantStatus.isStatusFile(name, in: directory) { return false }
                case "":
                    if name == "writer.lock" { return await checkLockFile() }
                    if name == "store.sqlite" { _ = await checkStoreFile() }
                    return false
                default:
                    return false
                }
            }
            if (try? await carryOut(readLifecycle())) == true { return true }
            if await checkStoreFile() { return false }
            if machine.phase != .writer {
                await manager.setNotAcceptingHint(
                    "participant '\(configuration.name)' does not hold the writer lease\(writerHint())")
            }
            if machine.phase == .writer, higherPriorityIsWaiting() {
                return (try? await carryOut(machine.higherPriorityWaiting())) ?? false
            }
            return false
        case .leaseAcquired(let held):
            acquiring = nil
            // A holding released since (the wait was cancelled), or one already taken in.
            guard lease.current == held, machine.held != held else { return false }
            let actions = machine.leaseAcquired(held)
            if actions == [.releaseUnused] {
                lease.release(held)
                record(.leaseReleased(epoch: held.epoch, reason: nil, releaseMillis: nil))
                return false
            }
            recoveryFailures[.lease] = nil
            if problem?.hasPrefix("could not record") == true { setProblem(nil) }
            let waited = MonotonicClock.millis() - acquireStarted
            if let takeover = held.takeover {
                record(.leaseTookOver(epoch: held.epoch, from: takeover))
                logger.warning(
                    "took the writer lease over from a holder that stopped renewing it",
                    metadata: [
                        "baton.holder":
                            "\(takeover.name ?? "?") (pid \(takeover.pid.map(String.init) ?? "?"))",
                        "baton.holderState": "\(takeover.holderState.rawValue)",
                    ])
            }
            record(.leaseAcquired(epoch: held.epoch, waitMillis: waited))
            let ends = (try? await carryOut(actions)) ?? false
            if machine.phase == .writer { resumeWriterWaiters() }
            return ends
        case .leaseFailed(let reason):
            acquiring = nil
            log.log("lease.failed", ["reason": .string(reason)])
            logger.error("could not take the writer lease", metadata: ["baton.reason": "\(reason)"])
            // Still waiting for the lease, with nothing waiting: try again after a pause.
            setProblem("could not record the writer lease (\(reason)); trying again")
            scheduleRecovery(.lease)
            return false
        case .leaseLost:
            return await checkLockFile()
        case .leaseBlocked(let blocked):
            if let blocked {
                record(.leaseBlocked(blocked))
                logger.error(
                    "the writer lease cannot be taken over", metadata: ["baton.reason": "\(blocked.message)"])
                setProblem(blocked.message)
            } else if problem != nil, lastBlocked != nil {
                record(.leaseBlocked(nil))
                setProblem(nil)
            }
            lastBlocked = blocked
            return false
        case .recover(let recovery):
            recoveries[recovery] = nil
            return await recover(recovery)
        case .syncUpdate(let state):
            await syncUpdated(state)
            return false
        case .retry(let name):
            retries[name] = nil
            await retry(name)
            return false
        case .shutdown:
            log.log("shutdown.requested")
            return (try? await carryOut(machine.shutdown())) ?? true
        }
    }

    func readLifecycle() -> [HandOverStateMachine.Action] {
        switch LifecycleSignal.read(directory: directory, name: configuration.name) {
        case .valid(let lifecycle):
            lastLifecycleProblem = nil
            if lifecycle != machine.desired { record(.lifecycle(lifecycle)) }
            return machine.lifecycle(lifecycle)
        case .missing, .empty:
            return []
        case .invalid(let reason):
            if lastLifecycleProblem != reason {
                lastLifecycleProblem = reason
                logger.warning("ignoring the lifecycle signal file", metadata: ["baton.reason": "\(reason)"])
                log.log("lifecycle.ignored", ["reason": .string(reason)])
            }
            return []
        }
    }

    /// A participant with a higher priority, alive, foreground and waiting for the lease.
    func higherPriorityIsWaiting() -> Bool {
        ParticipantStatus.readAll(in: directory).contains { other in
            other.name != configuration.name && other.priority > configuration.priority && other.isWaiting
                && other.lifecycle == .foreground && other.isAlive
        }
    }

    /// Carries out actions in order; returns true when the loop must end.
    func carryOut(_ actions: [HandOverStateMachine.Action]) async throws -> Bool {
        for action in actions {
            switch action {
            case .publish:
                publishOrRetry()
            case .startAcquiring:
                startAcquiring()
            case .cancelAcquiring:
                acquiring?.cancel()
                await acquiring?.value
                acquiring = nil
                // The lease may have been taken just before the cancel landed.
                if machine.held == nil, let taken = lease.current {
                    lease.release(taken)
                    record(.leaseReleased(epoch: taken.epoch, reason: nil, releaseMillis: nil))
                }
            case .becomeWriter:
                await becomeWriter()
            case .stopAndRelease(let reason):
                await stopAndRelease(reason)
                if try await carryOut(machine.released()) { return true }
            case .releaseUnused:
                // Handled where the lease arrives (`handle(.leaseAcquired)`).
                break
            case .exit:
                return true
            }
        }
        return false
    }

    func startAcquiring() {
        guard acquiring == nil, machine.held == nil else { return }
        if let taken = lease.current {
            // Taken by an earlier wait whose event is still queued: use it now.
            sink.yield(.leaseAcquired(taken))
            return
        }
        acquireStarted = MonotonicClock.millis()
        record(.leaseWaiting)
        let lease = self.lease
        let sink = self.sink
        let directory = self.directory
        let name = configuration.name
        let priority = configuration.priority
        acquiring = Task {
            do {
                let held = try await lease.acquire(
                    mayTry: {
                        // Hold back while a higher-priority participant waits for the lease.
                        !ParticipantStatus.readAll(in: directory).contains { other in
                            other.name != name && other.priority > priority && other.isWaiting
                                && other.lifecycle == .foreground
                                && other.isAlive
                        }
                    },
                    onBlocked: { sink.yield(.leaseBlocked($0)) })
                sink.yield(.leaseAcquired(held))
            } catch is CancellationError {
                return
            } catch {
                sink.yield(.leaseFailed(String(describing: error)))
            }
        }
    }

    func becomeWriter() async {
        guard let held = machine.held else { return }
        await manager.setWriteAccess(held.access)
        do {
            for soup in configuration.soups {
                try await store.registerSoup(soup.name, indexSpecs: soup.indexSpecs, fence: held.fence)
            }
            let recovered = try await manager.recoverInterruptedSyncs(under: held.access)
            if !recovered.isEmpty {
                log.log("syncs.recovered", ["ids": .array(recovered.map(JSONValue.int))])
            }
            let restarted = try await manager.restart(restartStoppedSyncs: true)
            log.log("manager.restarted", ["resumed": .array(restarted.map { .int($0.id) })])
            let resumed = Set(restarted.compactMap(\.name))
            for sync in configuration.syncs where !resumed.contains(sync.name) {
                try await runConfigured(sync)
            }
            for case .down(let name, _, _, _, true) in configuration.syncs {
                guard let state = try await manager.getSyncStatus(name: name) else { continue }
                queueGhostCleaning(syncId: state.id, name: name)
            }
            recoveryFailures[.writerStart] = nil
            if problem?.hasPrefix("could not start") == true { setProblem(nil) }
        } catch let error as StoreError where error.code == .staleEpoch {
            // The store's epoch moved past this holding before it could record itself: another
            // process recorded a newer one (it held a lock on a writer.lock replaced meanwhile).
            // This holding can never commit, and trying again with it would keep the lock from
            // everyone: step down, fenced, and wait for the lease again (a fresh epoch).
            logger.error("the writer lease moved before this holding's first write; stepping down")
            log.log("writer.error", ["error": .string(String(describing: error))])
            record(.leaseLost(epoch: held.epoch, takenOver: true, successor: nil))
            _ = try? await carryOut(machine.leaseLost(takenOver: true))
        } catch {
            logger.error("could not start syncs as writer", metadata: ["baton.error": "\(error)"])
            log.log("writer.error", ["error": .string(String(describing: error))])
            // Holding the lease with nothing running helps nobody: try again after a pause.
            setProblem("could not start syncs as writer (\(error)); trying again")
            scheduleRecovery(.writerStart)
        }
        await noteManagerState()
    }

    func runConfigured(_ sync: ConfiguredSync) async throws {
        if let existing = try await manager.getSyncStatus(name: sync.name) {
            // Persisted `running` but not running here (its end could not be written): the
            // manager resumes it; one it runs already answers `alreadyRunning`.
            do {
                try await manager.reSync(id: existing.id)
            } catch let error as SyncError where error.code == .alreadyRunning {
                return
            }
            return
        }
        switch sync {
        case .down(let name, let soup, let target, let options, _):
            try await manager.syncDown(target: target, options: options, soupName: soup, name: name)
        case .up(let name, let soup, let target, let options):
            try await manager.syncUp(target: target, options: options, soupName: soup, name: name)
        }
    }

    func queueGhostCleaning(syncId: Int64, name: String) {
        let manager = self.manager
        let log = self.log
        let previous = ghostCleaning
        ghostCleaning = Task {
            await previous?.value
            do {
                let deleted = try await manager.cleanResyncGhosts(id: syncId)
                log.log("ghosts.cleaned", ["name": .string(name), "deleted": .int(Int64(deleted))])
            } catch {
                log.log(
                    "ghosts.failed", ["name": .string(name), "error": .string(String(describing: error))])
            }
        }
    }

    func stopAndRelease(_ reason: HandOverStateMachine.ReleaseReason) async {
        let started = MonotonicClock.millis()
        let begun = ContinuousClock.now
        cancelRetries()
        log.log("stop.requested", ["reason": .string(reason.rawValue)])
        await manager.stop()
        await noteManagerState()
        // Past the deadline, interrupt the SQLite statement in flight (its page rolls back) and
        // abandon a wait for a lock held elsewhere, so the stop completes; the watchdog is
        // cancelled as soon as the stop is done.
        let store = self.store
        let log = self.log
        let deadline = configuration.stopDeadline
        let watchdog = Task {
            try await Task.sleep(for: deadline)
            log.log("stop.deadline", ["action": "interrupt"])
            store.interrupt()
        }
        await manager.waitUntilStopped()
        watchdog.cancel()
        let deadlinePassed = ContinuousClock.now - begun >= deadline
        if !deadlinePassed {
            // A sync's end that could not be written yet: one more try while the lease is held
            // (past it, the next holder's recovery sets it `stopped`).
            let unpersisted = await manager.flushUnpersisted()
            if !unpersisted.isEmpty {
                log.log("syncs.unpersisted", ["ids": .array(unpersisted.map(JSONValue.int))])
            }
        }
        cancelRecovery(.writerStart)
        let stopMs = MonotonicClock.millis() - started
        log.log("stopped", ["stopMs": .double((stopMs * 10).rounded() / 10)])
        await noteManagerState()
        try? store.checkpoint()
        await manager.setWriteAccess(nil)
        await manager.setNotAcceptingHint(
            "participant '\(configuration.name)' does not hold the writer lease")
        // A local edit under way commits (or fails its fence) before the lease is let go.
        await waitForLocalWrites()
        if let held = machine.held {
            // The release time goes into the lock file (the next holder's first write records
            // it). Fenced, the interval is the taker's to close: this process writes nothing.
            lease.release(held, recordRelease: machine.phase != .fenced)
            let totalMs = MonotonicClock.millis() - started
            record(.leaseReleased(epoch: held.epoch, reason: reason, releaseMillis: totalMs))
        }
        store.resumeWrites()
    }

    /// Logs and broadcasts `event`.
    func record(_ event: ParticipantEvent) {
        Self.record(event, log: log, broadcaster: broadcaster)
    }

    /// ``record(_:)`` from outside the actor: the manager's observer records each sync state as
    /// it persists it, so the log holds them in order with what follows (a clean resync ghosts
    /// logged after its sync).
    static func record(_ event: ParticipantEvent, log: ParticipantLog, broadcaster: Broadcaster<ParticipantEvent>) {
        log.log(event.logName, event.logFields)
        broadcaster.send(event)
    }

    func syncUpdated(_ state: SyncState) async {
        if let name = state.name, configuration.syncs.contains(where: { $0.name == name }) {
            switch state.status {
            case .done:
                failures[name] = nil
                if retryStatus.removeValue(forKey: name) != nil { publishOrRetry() }
            case .failed:
                if await checkStoreFile() { break }
                scheduleRetry(name, after: state.error)
            default: break
            }
        }
        await noteManagerState()
    }

    // MARK: - Retrying failed syncs

    /// Runs a failed configured sync again after a delay that doubles with each failure in a
    /// row (a server that is down or failing gets a growing pause, not a stream of requests).
    ///
    /// The published status says which syncs are retried, why the last attempt failed and when
    /// the next one starts (`baton status`, `baton syncs`).
    func scheduleRetry(_ name: String, after error: String?) {
        guard machine.held != nil, let base = configuration.retryDelay, retries[name] == nil else { return }
        let attempt = (failures[name] ?? 0) + 1
        failures[name] = attempt
        let delay = backoff(base, attempt: attempt)
        record(.syncRetry(name: name, attempt: attempt, delay: delay))
        retries[name] = yield(.retry(name), after: delay)
        let millis = delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
        retryStatus[name] = SyncRetry(
            name: name, attempt: attempt, lastError: error ?? retryStatus[name]?.lastError ?? "unknown",
            nextAttempt: WallClock.nowMillis() + millis)
        publishOrRetry()
    }

    /// `base` doubled for each failure in a row before `attempt`, up to the maximum retry delay.
    func backoff(_ base: Duration, attempt: Int) -> Duration {
        min(base * (1 << min(attempt - 1, 16)), configuration.maxRetryDelay)
    }

    /// Feeds `event` to the event loop after `delay`, unless the task is cancelled first (the
    /// lease is going away, or the participant is shutting down).
    func yield(_ event: Event, after delay: Duration) -> Task<Void, Never> {
        let sink = self.sink
        return Task {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            sink.yield(event)
        }
    }

    func retry(_ name: String) async {
        guard machine.phase == .writer, machine.held != nil,
            let sync = configuration.syncs.first(where: { $0.name == name })
        else { return }
        do {
            try await runConfigured(sync)
            if case .down(let name, _, _, _, true) = sync,
                let state = try await manager.getSyncStatus(name: name)
            {
                queueGhostCleaning(syncId: state.id, name: name)
            }
        } catch {
            // The rerun could not even start (its `running` could not be written): keep trying.
            log.log("writer.error", ["error": .string(String(describing: error))])
            scheduleRetry(name, after: String(describing: error))
        }
    }

    func cancelRetries() {
        for task in retries.values { task.cancel() }
        retries = [:]
        retryStatus = [:]
    }

    // MARK: - Recovering from storage failures

    /// Notes what keeps the participant from its work (or that nothing does) and publishes it.
    func setProblem(_ text: String?) {
        guard text != problem else { return }
        problem = text
        record(.problem(text))
        publishOrRetry()
    }

    /// Fires `recovery` after a pause that doubles with each failure in a row (the participant's
    /// retry delay, 500 ms by default, up to its maximum).
    func scheduleRecovery(_ recovery: Recovery) {
        guard recoveries[recovery] == nil else { return }
        let attempt = (recoveryFailures[recovery] ?? 0) + 1
        recoveryFailures[recovery] = attempt
        let delay = backoff(configuration.retryDelay ?? .milliseconds(500), attempt: attempt)
        recoveries[recovery] = yield(.recover(recovery), after: delay)
    }

    func cancelRecovery(_ recovery: Recovery) {
        recoveries.removeValue(forKey: recovery)?.cancel()
    }

    /// Returns true when the loop must end.
    func recover(_ recovery: Recovery) async -> Bool {
        switch recovery {
        case .lease:
            if machine.phase == .waitingForLease, acquiring == nil, machine.held == nil { startAcquiring() }
        case .writerStart:
            if machine.phase == .writer, machine.held != nil { await becomeWriter() }
        case .publish:
            publishOrRetry()
        }
        return false
    }

    /// Publishes the status; when that fails (a full disk), says so in the log and tries again
    /// until it lands, so `baton status` never keeps showing a stale phase.
    func publishOrRetry() {
        do {
            try publish()
            recoveryFailures[.publish] = nil
        } catch {
            if recoveryFailures[.publish] == nil {
                log.log("status.failed", ["error": .string(String(describing: error))])
                logger.error(
                    "could not publish the participant's status", metadata: ["baton.error": "\(error)"])
            }
            scheduleRecovery(.publish)
        }
    }

    /// When `D/writer.lock` was deleted or replaced while this process holds the lease, it may
    /// not write: either another participant took the lease over (this one had stopped renewing
    /// it: frozen, hung), and its epoch fences this one's writes; or somebody deleted the file,
    /// and another process can take a lock on the new one. It stops its syncs (resumable) and
    /// waits for the lease again, so priority order holds.
    func checkLockFile() async -> Bool {
        guard let held = machine.held, machine.phase == .writer || machine.phase == .releasing,
            !lease.holdsLockFile
        else {
            return false
        }
        // Taken over: the file now in place says it took this epoch over (a taker renames its
        // file in before its transaction commits, so the store may not say so yet).
        let successor = HeartbeatRecord.read(at: directory.writerLockPath)
        let takenOver = successor?.takenOver == held.epoch
        if takenOver {
            logger.error(
                "the writer lease was taken over while this process was not renewing it; stepping down")
        } else {
            logger.error("the writer lock file was deleted or replaced; stepping down")
        }
        record(
            .leaseLost(
                epoch: held.epoch, takenOver: takenOver,
                successor: successor.map { $0.line.trimmingCharacters(in: .whitespacesAndNewlines) }))
        return (try? await carryOut(machine.leaseLost(takenOver: takenOver))) ?? false
    }

    /// When the store file was deleted, renamed or replaced: says so (log and status) and, as
    /// writer, hands the lease over; it writes nothing more. Returns true when that is the case.
    func checkStoreFile() async -> Bool {
        guard let reason = store.fileProblem() else { return false }
        if problem != reason {
            logger.error("the store file changed under this process", metadata: ["baton.reason": "\(reason)"])
            log.log("store.lost", ["reason": .string(reason)])
            setProblem(reason)
        }
        if machine.phase == .writer { _ = try? await carryOut(machine.cannotWrite(.storeLost)) }
        return true
    }

    /// Logs and publishes the manager's state when it changed.
    func noteManagerState() async {
        let state = await manager.state
        if state != lastManagerState {
            lastManagerState = state
            record(.manager(state))
            try? publish(managerState: state)
        }
    }

    func writerHint() -> String {
        guard
            let writer = ParticipantStatus.readAll(in: directory).first(where: { $0.isWriter && $0.isAlive })
        else { return "" }
        return "; the writer is '\(writer.name)' (pid \(writer.pid))"
    }

    func publish(managerState: ManagerStateMachine.State? = nil) throws {
        let status = ParticipantStatus(
            role: configuration.role, name: configuration.name, priority: configuration.priority,
            pid: getpid(),
            lifecycle: machine.desired, phase: machine.phase, epoch: machine.held?.epoch,
            managerState: (managerState ?? lastManagerState)?.rawValue ?? "stopped",
            updated: WallClock.nowMillis(), problem: problem,
            retrying: retryStatus.values.sorted { $0.name < $1.name })
        try status.publish(in: directory)
    }
}
