import BatonStore
import BatonSync
import Foundation
import Logging
import ServiceLifecycle

/// One process's member of the shared directory: owns its sync engine, the inotify watcher and
/// the writer lease, and follows its lifecycle signal.
///
/// Its rules are ``ParticipantMachine``'s, a pure state machine; this actor only interprets it:
/// it turns what happens (the directory watcher, the lease, the sync manager, timers, local
/// edits) into the machine's events, carries out the actions the machine returns, and feeds
/// their outcomes back as events.
///
/// Background: `stop()`, wait for `isStopped()` up to the deadline (then interrupt the SQLite
/// statement in flight), release, publish; a passive WAL checkpoint runs after the release.
/// Foreground: publish, take the lease (highest priority first), register the configured soups,
/// recover interrupted syncs, `restart(true)`, run the configured syncs. ``run()`` ends after
/// ``shutdown()`` (or a graceful shutdown of the `ServiceGroup` it runs in: SIGTERM/SIGINT) has
/// released everything.
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
    typealias Machine = ParticipantMachine<WriterLease.Held>

    /// What the event loop hears of, in order.
    enum Input: Sendable {
        case directory(DirectoryWatcher.Event)
        /// The lease's current holding, `waitMillis` after asking, from the wait `wait` (nil: a
        /// holding taken by an earlier wait).
        case leaseGranted(WriterLease.Held, waitMillis: Double, wait: UUID?)
        case leaseFailed(String, wait: UUID)
        /// The held lock file was replaced or deleted (the heartbeat noticed).
        case lockFileChanged
        /// A takeover waits for a holder that keeps SQLite's write lock (nil: no longer).
        case leaseBlocked(WriterLease.Blocked?)
        case syncUpdate(SyncState)
        /// The manager set aside a sync it cannot run (its row cannot be read).
        case syncSetAside(SetAsideSync)
        case timerFired(Machine.TimerID)
        /// The manager stopped (the wait `awaitManagerStop` began).
        case managerStopped
        case localEditEnded
        /// A status write ended: nil when it succeeded, else its error.
        case statusWritten(String?)
        case shutdown
    }

    let configuration: ParticipantConfiguration
    let directory: SharedDirectory
    let store: SharedStore
    let manager: SyncManager
    let lease: WriterLease
    let log: ParticipantLog
    let logger: Logger
    /// Logs and broadcasts what happens.
    let recorder: ParticipantRecorder
    /// Starts the writer's syncs and reruns failed ones.
    let syncs: WriterSyncs
    /// Writes the status file off the event loop (a file replaced takes ext4 half a
    /// millisecond or more); the outcomes come back as `statusWritten`.
    let publisher: StatusPublisher
    /// Reads the directory and the store (and holds the name).
    var reader: DirectoryReader
    /// The rules, and the single truth of where this participant is (the lease it holds among
    /// it).
    var machine: Machine
    /// The wait for the lease under way, if any (its id tells its outcome from a stale one's).
    var leaseWait: LeaseWait?
    /// The wait for the manager's stop under way, if any.
    var stopWait: Task<Void, Never>?
    var hasRun = false
    /// The machine's timers, running.
    var timers: [Machine.TimerID: Task<Void, Never>] = [:]
    /// Local edits waiting for this participant to become the writer.
    var writerWaiters: [UUID: CheckedContinuation<Void, any Error>] = [:]
    /// The event loop's input.
    nonisolated let inbox: AsyncStream<Input>
    nonisolated let sink: AsyncStream<Input>.Continuation
    nonisolated let broadcaster = Broadcaster<ParticipantEvent>(buffering: 4096)

    /// What this participant does, as it happens (lease, lifecycle, manager state, syncs,
    /// retries, problems), typed; each access is a subscription of its own, from now on. It
    /// finishes when ``run()`` ends. `D/logs/<name>.jsonl` records the same.
    public nonisolated var events: AsyncStream<ParticipantEvent> { broadcaster.subscribe() }

    /// Makes the participant `configuration.name` in `directory`: checks the name, claims it (one
    /// live process per name; `nameInUse` otherwise) and opens its lease and log. Nothing runs
    /// until ``run()``.
    public init(
        configuration: ParticipantConfiguration, directory: SharedDirectory, store: SharedStore,
        manager: SyncManager, logger: Logger
    ) throws {
        let name = try NameClaim(configuration.name, in: directory)
        self.configuration = configuration
        self.directory = directory
        self.store = store
        self.manager = manager
        self.logger = logger
        machine = Machine(configuration)
        let (inbox, sink) = AsyncStream.makeStream(of: Input.self)
        (self.inbox, self.sink) = (inbox, sink)
        lease = try WriterLease(
            directory: directory, store: store, name: configuration.name, term: configuration.leaseTerm,
            frozenHolder: configuration.frozenHolder, onLost: { sink.yield(.lockFileChanged) })
        log = try ParticipantLog(
            directory: directory, name: configuration.name, limit: configuration.logLimit)
        recorder = ParticipantRecorder(log: log, logger: logger, broadcaster: broadcaster)
        reader = DirectoryReader(
            configuration: configuration, directory: directory, store: store, log: log, logger: logger,
            name: name)
        syncs = WriterSyncs(
            configuration: configuration, store: store, manager: manager, log: log, logger: logger)
        publisher = StatusPublisher(directory: directory) { sink.yield(.statusWritten($0)) }
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
    /// next sync up. A release waits for an edit under way: nothing commits after the lease is
    /// let go.
    ///
    /// - Parameters:
    ///   - timeout: nil fails at once unless this participant is the writer; otherwise it waits
    ///     up to `timeout` for it to become the writer (it must be in the foreground).
    ///   - body: the edits, made through the ``LocalEdits`` of the transaction.
    /// - Returns: the body's result.
    /// - Throws: `notWriter`, naming the current writer, when it is not (in time); `leaseLost`
    ///   when the lease was taken over or its lock file went away before the commit (the body
    ///   rolled back whole); the body's own errors (it rolled back too); `StoreError` on a
    ///   failed write.
    public func write<T: Sendable>(
        waitingUpTo timeout: Duration? = nil, _ body: @escaping @Sendable (LocalEdits) throws -> T
    ) async throws -> T {
        switch machine.admitEdit(waitingUpTo: timeout) {
        case .now: break
        case .wait(let wait): try await waitToBeWriter(timeout: wait)
        case .refused: throw notWriterError()
        }
        guard let held = machine.beginLocalEdit() else { throw notWriterError() }
        defer { sink.yield(.localEditEnded) }
        do {
            let result = try await store.write(held.fence) { try body(LocalEdits($0)) }
            recorder.record(.localWrite(epoch: held.epoch))
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
            "participant '\(configuration.name)' does not hold the writer lease (it is \(machine.notWriterState))\(reader.writerHint()); bring it to the foreground, or pass a timeout to wait"
        )
    }

    /// Returns once this participant is the writer; throws `notWriter` past `timeout`.
    func waitToBeWriter(timeout: Duration) async throws {
        let id = UUID()
        let timer = Task { [weak self] in
            // Cancelled: the wait ended before the timeout.
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

    // MARK: - The event loop

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
        await manager.setNotAcceptingHint(reader.notWriterHint())
        log.log(
            "started",
            [
                "role": .string(configuration.role.rawValue), "priority": .int(Int64(configuration.priority)),
                "pid": .int(Int64(getpid())),
            ])
        try reader.status(of: machine).publish(in: directory)
        let watched = try DirectoryWatcher(
            root: directory.path, subdirectories: ["lifecycle", "participants"]
        ).events()
        let recorder = self.recorder
        await manager.setObserver { recorder.record(.sync($0)) }
        let updates = await manager.updates()
        let setAsides = await manager.setAsideSyncs()
        let (manager, sink, logger) = (self.manager, self.sink, self.logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await manager.run()
                } catch {
                    logger.error("the sync manager stopped running", metadata: ["baton.error": "\(error)"])
                }
            }
            group.addTask { for await event in watched { sink.yield(.directory(event)) } }
            group.addTask { for await update in updates { sink.yield(.syncUpdate(update)) } }
            group.addTask { for await sync in setAsides { sink.yield(.syncSetAside(sync)) } }
            sink.yield(.directory(.rescan("start")))
            for await input in inbox {
                if await handle(input) { break }
            }
            await endRun()
            group.cancelAll()
        }
        // The last status (finished) is on disk before run() returns.
        await publisher.flush()
        let longest = store.longestWriteTransaction.inMilliseconds
        log.log("exited", ["longestTransactionMs": .double((longest * 100).rounded() / 100)])
        broadcaster.finish()
    }

    /// What outlives the loop: the waits and timers end, and local edits still waiting for the
    /// lease will not get it from this run.
    private func endRun() async {
        await leaseWait?.cancel()
        stopWait?.cancel()
        await stopWait?.value
        await syncs.finishGhostCleaning()
        for timer in timers.values { timer.cancel() }
        timers = [:]
        for id in Array(writerWaiters.keys) { expireWriterWaiter(id) }
    }

    /// Turns one input into the machine's events (with the reads that they report) and feeds
    /// them; returns true when the loop must end.
    func handle(_ input: Input) async -> Bool {
        switch input {
        case .directory(let change):
            return await feed(reader.changed(change))
        case .leaseGranted(let held, let waitMillis, let wait):
            if let wait, leaseWait?.id == wait { leaseWait = nil }
            // A holding released since (the wait was cancelled) is nobody's to adopt.
            guard lease.current == held else { return false }
            return await feed([.leaseGranted(held, waitMillis: waitMillis)])
        case .leaseFailed(let reason, let wait):
            // Only the wait under way counts (a cancelled one's failure says nothing now).
            guard leaseWait?.id == wait else { return false }
            leaseWait = nil
            return await feed([.leaseFailed(reason)])
        case .lockFileChanged:
            return await feed([.lockFileChanged])
        case .leaseBlocked(let blocked):
            return await feed([.leaseBlocked(blocked)])
        case .syncUpdate(let state):
            var events: [Machine.Event] = []
            switch (state.name, state.status) {
            case (let name?, .done): events.append(.syncFinished(name))
            case (let name?, .failed): events.append(reader.syncFailed(name, error: state.error))
            default: break
            }
            return await feed(events + [.syncStateChanged])
        case .syncSetAside(let sync):
            recorder.record(.syncSetAside(id: sync.id, name: sync.name, error: sync.error.message))
            // A configured one is retried as a failed sync is: once its row is repaired, it runs.
            guard let name = sync.name else { return false }
            return await feed([reader.syncFailed(name, error: sync.error.message)])
        case .timerFired(let id):
            timers[id] = nil
            return await feed([.timerFired(id)])
        case .managerStopped:
            stopWait = nil
            return await feed([.managerStopped])
        case .localEditEnded:
            return await feed([.localEditEnded])
        case .statusWritten(let error):
            return await feed([error.map(Machine.Event.publishFailed) ?? .published])
        case .shutdown:
            log.log("shutdown.requested")
            return await feed([.shutdown])
        }
    }

    /// Feeds `events` to the machine in order and carries out the actions it returns, each to
    /// its end (no action is carried out inside another): once all of one event's actions are
    /// carried out, the events they returned are fed, ahead of those still pending. Returns true
    /// on `exit`.
    func feed(_ events: [Machine.Event]) async -> Bool {
        var pending = events
        while !pending.isEmpty {
            var outcomes: [Machine.Event] = []
            for action in machine.handle(pending.removeFirst()) {
                outcomes += await carryOut(action)
                if action == .exit { return true }
            }
            pending.insert(contentsOf: outcomes, at: 0)
        }
        return false
    }
}
