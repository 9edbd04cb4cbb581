import BatonCoordinator
import BatonStore
import BatonSync

/// One simulated participant process: its real ``ParticipantMachine``, its acquisition's real
/// ``AcquireMachine`` while it waits, and what the process holds around them (descriptors, the
/// heartbeat, the writer's work, timers, the events that wait while it is stopped).
final class SimulatedParticipant {
    enum LifecycleFile: Equatable {
        case foreground, background, junk, missing
    }

    /// A wait for the lease under way.
    struct Acquisition {
        var run: Int
        var machine: AcquireMachine
        var started: UInt64
        var kept: Int?
        var inHand: Int?
        var kernelWait: Int?
        var watching = false
        /// Changes seen (status files, a new lock file, a grant), and those seen when the round began.
        var rings = 0
        var roundRings = 0
        /// The sleep under way (nil: not sleeping).
        var sleepToken: Int?
        /// The holding begun, until the acquisition hands it to the machine.
        var taken: SimulatedLease?
    }

    /// The heartbeat's holding: the lock file it beats into.
    struct Holding {
        var lease: SimulatedLease
    }

    /// The writer's syncs: pages left for each, run one after another; the page being saved.
    struct Writer {
        var lease: SimulatedLease
        var term: Int
        var started = false
        var since: UInt64
        var syncs: [(name: String, pages: Int)]
        var page: (sync: String, inTransaction: Bool)?
        var stopping = false
        var stopWaiting = false
        var busySince: UInt64?
        /// The run of `accounts` under way.
        var accounts: AccountsRun?
    }

    let index: Int
    let name: String
    let priority: Int
    var pid: Int32
    var incarnation = 0
    var state: ProcessState = .running
    var machine: Machine
    var deferred: [Happening] = []
    var lifecycleFile: LifecycleFile = .background
    var acquisition: Acquisition?
    var runs = 0
    var holding: Holding?
    var lastBeat: UInt64 = 0
    /// When it was last thawed (a holder just thawed may be taken over for its silence).
    var lastFrozen: UInt64?
    /// Since when it has been a writer with an epoch the store has passed.
    var passedSince: UInt64?
    /// Holdings whose first write found the fence dead.
    var deadFences: Set<SimulatedLease> = []
    /// When this process started.
    var startedAt: UInt64 = 0
    /// When it was sent SIGTERM, until it exits.
    var terminatedAt: UInt64?
    var writer: Writer?
    var writerTerms = 0
    var managerState: ManagerStateMachine.State = .acceptingSyncs
    var timers: Set<Machine.TimerID> = []
    /// What its status file says: its phase and lifecycle as last published.
    var published: (phase: ParticipantPhase, lifecycle: Lifecycle)?

    static let syncNames = ["accounts", "trees"]

    init(index: Int, name: String, priority: Int, pid: Int32) {
        self.index = index
        self.name = name
        self.priority = priority
        self.pid = pid
        machine = Self.freshMachine()
    }

    static func freshMachine() -> Machine {
        Machine(
            configuredSyncs: syncNames, retryDelay: .milliseconds(200), maxRetryDelay: .seconds(5),
            stopDeadline: .seconds(5), saveGrace: nil)
    }

    func lifecycleEvents(wallMillis: Int64) -> [Machine.Event] {
        switch lifecycleFile {
        case .foreground: [.lifecycle(.foreground)]
        case .background: [.lifecycle(.background)]
        case .junk: [.lifecycleIgnored("is not foreground or background", at: wallMillis)]
        case .missing: [.lifecycleMissing]
        }
    }
}

extension Simulation {
    // MARK: - The participant's loop

    /// Feeds `events` in order and carries out each action, as `Participant.feed` does: the
    /// events an action answers are fed before those still pending.
    func feed(_ participant: SimulatedParticipant, _ events: [Machine.Event]) {
        var pending = events
        while !pending.isEmpty, participant.state == .running {
            let event = pending.removeFirst()
            // The planted bug: the failure never reaches the machine.
            if options.mutation == .syncFailureUnheard, case .syncFailed = event { continue }
            var actions = participant.machine.handle(event)
            if options.mutation == .startingWriterIgnoresPriority, event == .writerStarted {
                actions.removeAll { $0 == .checkPriority }
            }
            var outcomes: [Machine.Event] = []
            for action in actions {
                outcomes += carryOut(action, for: participant)
                if action == .exit { return }
            }
            pending.insert(contentsOf: outcomes, at: 0)
        }
    }

    func send(_ participant: SimulatedParticipant, _ event: Machine.Event) {
        schedule(.input(participant.index, incarnation: participant.incarnation, event), after: latency())
    }

    func carryOut(_ action: Machine.Action, for participant: SimulatedParticipant) -> [Machine.Event] {
        switch action {
        case .publish:
            participant.published = (participant.machine.phase.name, participant.machine.desired)
            send(participant, .published)
            statusChanged(by: participant)
        case .record:
            break
        case .startAcquiring:
            startAcquiring(participant)
        case .cancelAcquiring:
            cancelAcquiring(participant)
        case .becomeWriter(let lease):
            if participant.deadFences.contains(lease) {
                fail(
                    "a holding whose fence is dead steps down",
                    "\(participant.name) starts again as writer with epoch \(lease.epoch), whose first write found the store's epoch past it (\(kernel.storeEpoch))"
                )
            }
            participant.writerTerms += 1
            participant.writer = SimulatedParticipant.Writer(
                lease: lease, term: participant.writerTerms, since: now,
                syncs: SimulatedParticipant.syncNames.map {
                    ($0, $0 == "accounts" ? Int.max : 1 + Int(random.next() % 5))
                })
            scheduleWriter(participant, .start, after: 1_000_000 + random.next() % 10_000_000)
        case .runSync(let name):
            if var writer = participant.writer, writer.started, !writer.stopping {
                let idle = writer.syncs.isEmpty && writer.page == nil
                writer.syncs.append((name, name == "accounts" ? Int.max : 1 + Int(random.next() % 3)))
                participant.writer = writer
                if idle { scheduleWriter(participant, .fetch, after: latency()) }
            }
        case .stopManager:
            participant.writer?.stopping = true
            participant.writer?.syncs = []
            participant.managerState = participant.writer?.page == nil ? .stopped : .stopRequested
            return [.managerStopping(participant.managerState, began: nowMillis)]
        case .awaitManagerStop:
            if participant.writer?.page == nil {
                send(participant, .managerStopped)
            } else {
                participant.writer?.stopWaiting = true
            }
        case .endPageSaveEarly:
            endPage(participant, committing: true)
        case .interruptStore:
            endPage(participant, committing: false)
        case .dropWriteAccess:
            participant.writer = nil
            participant.managerState = .stopped
            return [.managerState(.stopped), .syncsStopped]
        case .releaseLease(let lease, _, let recordRelease, _):
            guard recordRelease else {
                release(lease, of: participant, released: true)
                return [.released]
            }
            // The release closes its history row in a short transaction (which waits for
            // SQLite's write lock), then lets the lock file go: `released` follows.
            scheduleRelease(participant, lease, .begin, after: latency())
        case .releaseUnused(let lease):
            release(lease, of: participant, released: false)
        case .scheduleTimer(let id, let delay):
            participant.timers.insert(id)
            schedule(
                .timer(participant.index, incarnation: participant.incarnation, id),
                after: UInt64(max(0, delay.inNanoseconds)))
        case .cancelTimer(let id):
            participant.timers.remove(id)
        case .checkStore:
            return [.storeBack]
        case .checkLockFile(let lease):
            guard kernel.pathGeneration != lease.generation else { return [] }
            let successor = kernel.files[kernel.pathGeneration]?.record
            return [.leaseLost(takenOver: successor?.takenOver == lease.epoch, successor: successor?.line)]
        case .checkPriority:
            return higherPriorityIsWaiting(than: participant) ? [.higherPriorityWaiting] : []
        case .readManagerState:
            return [.managerState(participant.managerState)]
        case .exit:
            // The process ends; the run starts it again later, as chaos does.
            end(participant)
            schedule(.restart(participant.index), after: 20_000_000 + random.next() % 300_000_000)
        case .resumeEditWaiters, .flushUnpersisted, .copyBackCompletely, .checkpointAfterRelease,
            .refreshWriterHint:
            break
        }
        return []
    }

    /// A status file changed: every other participant reads the directory, and every wait
    /// watching for changes wakes.
    func statusChanged(by participant: SimulatedParticipant) {
        for other in participants where other !== participant && other.state != .dead {
            schedule(.directory(other.index, incarnation: other.incarnation), after: latency())
            ring(other)
        }
    }

    func higherPriorityIsWaiting(than participant: SimulatedParticipant) -> Bool {
        participants.contains { other in
            other !== participant && other.priority > participant.priority && other.state != .dead
                && other.published?.phase == .waitingForLease && other.published?.lifecycle == .foreground
        }
    }

    // MARK: - The lease

    func startAcquiring(_ participant: SimulatedParticipant) {
        guard participant.acquisition == nil else { return }
        participant.runs += 1
        let machine = AcquireMachine(
            now: now, term: Self.term, firstLook: .milliseconds(20), interval: .milliseconds(100),
            frozenHolder: FrozenHolder(policy: .thaw, bound: .seconds(2)))
        participant.acquisition = SimulatedParticipant.Acquisition(
            run: participant.runs, machine: machine, started: now)
        perform(machine.asked, for: participant)
    }

    func cancelAcquiring(_ participant: SimulatedParticipant) {
        guard let acquisition = participant.acquisition else { return }
        participant.acquisition = nil
        for descriptor in [acquisition.kept, acquisition.inHand, acquisition.kernelWait].compactMap({ $0 }) {
            close(descriptor)
        }
        if let taken = acquisition.taken { release(taken, of: participant, released: false) }
    }

    func advanceAcquisition(_ participant: SimulatedParticipant, run: Int, _ event: AcquireMachine.Event) {
        guard participant.acquisition?.run == run else { return }
        guard let action = participant.acquisition?.machine.handle(event) else { return }
        perform(action, for: participant)
    }

    func answer(_ participant: SimulatedParticipant, _ event: AcquireMachine.Event) {
        guard let run = participant.acquisition?.run else { return }
        schedule(
            .acquire(participant.index, incarnation: participant.incarnation, run: run, event),
            after: latency())
    }

    /// Carries out an acquisition's action; its answer arrives as a later event.
    func perform(_ action: AcquireMachine.Action, for participant: SimulatedParticipant) {
        guard var acquisition = participant.acquisition else { return }
        defer {
            // Changes rung while the action ran (a grant, a new lock file) are kept.
            if let current = participant.acquisition, current.run == acquisition.run {
                acquisition.rings = max(acquisition.rings, current.rings)
                participant.acquisition = acquisition
            }
        }
        switch action {
        case .askMayTry:
            answer(participant, .mayTry(!higherPriorityIsWaiting(than: participant)))
        case .beginRound:
            acquisition.roundRings = acquisition.rings
            answer(participant, .mayTry(!higherPriorityIsWaiting(than: participant)))
        case .probe(let reuseKept):
            let descriptor =
                (reuseKept ? acquisition.kept : nil)
                ?? kernel.open(by: participant.index, generation: kernel.pathGeneration)
            if reuseKept { acquisition.kept = nil }
            let generation = kernel.generation(of: descriptor)
            if kernel.tryLock(descriptor) {
                acquisition.inHand = descriptor
                answer(participant, .probed(.locked(stillAtPath: generation == kernel.pathGeneration)))
                mayFreezeJustLocked(participant)
            } else {
                acquisition.kept = descriptor
                answer(participant, .probed(.busy(SimulatedKernel.identity(generation))))
            }
        case .watchChanges:
            acquisition.watching = true
            answer(participant, .done)
        case .takeGrant:
            if let wait = acquisition.kernelWait, kernel.files[kernel.generation(of: wait)]?.holder == wait {
                acquisition.kernelWait = nil
                acquisition.inHand = wait
                answer(
                    participant, .granted(stillAtPath: kernel.generation(of: wait) == kernel.pathGeneration))
                mayFreezeJustLocked(participant)
            } else {
                answer(participant, .notGranted)
            }
        case .lookAtLockFile:
            answer(participant, .lockFile(SimulatedKernel.identity(kernel.pathGeneration)))
        case .closeKept:
            if let kept = acquisition.kept { close(kept) }
            acquisition.kept = nil
            answer(participant, .done)
        case .startKernelWait:
            if let kept = acquisition.kept {
                acquisition.kept = nil
                acquisition.kernelWait = kept
                let generation = kernel.generation(of: kept)
                kernel.files[generation]?.waiters.append(kept)
                if kernel.files[generation]?.holder == nil { grant(generation) }
            }
            answer(participant, .done)
        case .abandonKernelWait:
            if let wait = acquisition.kernelWait { close(wait) }
            acquisition.kernelWait = nil
            answer(participant, .done)
        case .readClock:
            answer(participant, .clock(now))
        case .readDeadlineClock:
            answer(participant, .deadlineClock(ContinuousClock.now))
        case .observeHolder(let generation):
            answer(participant, .holderObserved(observe(generation)))
        case .takeOver(let seen, let silent, let pursued):
            let result = takeOver(seen, silentNanos: silent, pursued: pursued, by: participant, &acquisition)
            answer(participant, .takeover(result))
        case .report(let blocked):
            send(participant, .leaseBlocked(blocked))
            answer(participant, .done)
        case .unfreeze(let pid, let policy):
            answer(participant, .unfroze(unfreeze(pid: pid, policy: policy)))
        case .begin:
            if let descriptor = acquisition.inHand {
                acquisition.inHand = nil
                let generation = kernel.generation(of: descriptor)
                let last = kernel.files[generation]?.record
                let epoch = (last?.epoch ?? kernel.storeEpoch) + 1
                let lease = SimulatedLease(
                    epoch: epoch, generation: generation, descriptor: descriptor, takenOver: false)
                hold(lease, by: participant, takenOver: 0)
                acquisition.taken = lease
            }
            answer(participant, .began)
        case .unlock:
            if let descriptor = acquisition.inHand { close(descriptor) }
            acquisition.inHand = nil
            answer(participant, .done)
        case .sleep(let duration):
            acquisition.sleepToken =
                (acquisition.sleepToken ?? 0) &+ Int(truncatingIfNeeded: random.next() >> 1)
            let token = acquisition.sleepToken ?? 0
            let delay =
                acquisition.watching && acquisition.rings > acquisition.roundRings
                ? latency() : UInt64(max(0, duration.inNanoseconds))
            schedule(
                .wake(
                    participant.index, incarnation: participant.incarnation, run: acquisition.run,
                    token: token),
                after: delay)
        case .finish(let ending):
            participant.acquisition = nil
            switch ending {
            case .held:
                if let taken = acquisition.taken {
                    send(
                        participant, .leaseGranted(taken, waitMillis: Double(now - acquisition.started) / 1e6)
                    )
                }
            case .failed, .timedOut:
                send(participant, .leaseFailed("the acquisition ended \(ending)"))
            case .cancelled:
                break
            }
            return
        }
    }

    /// A change an acquisition watches for: its sleep ends.
    func ring(_ participant: SimulatedParticipant) {
        guard var acquisition = participant.acquisition, acquisition.watching else { return }
        acquisition.rings += 1
        if let token = acquisition.sleepToken {
            schedule(
                .wake(
                    participant.index, incarnation: participant.incarnation, run: acquisition.run,
                    token: token),
                after: latency())
        }
        participant.acquisition = acquisition
    }

    func observe(_ generation: FileIdentity?) -> TakeoverWatch.Observation {
        let file = kernel.files[kernel.pathGeneration]
        var record = file?.record
        if options.mutation == .takeoverOfRunningHolder { record?.beat = 0 }
        return TakeoverWatch.Observation(
            generation: generation, record: record, content: visibleContent(file),
            holderState: record.map { holderState(pid: $0.pid) } ?? .unknown, now: now)
    }

    /// The lock file's content as a waiter reads it (with the planted bug, without the beat).
    func visibleContent(_ file: SimulatedKernel.LockFile?) -> String {
        guard options.mutation == .takeoverOfRunningHolder, var record = file?.record else {
            return file?.record?.line ?? ""
        }
        record.beat = 0
        return record.line
    }

    func holderState(pid: Int32) -> ProcessState {
        participants.first { $0.pid == pid }?.state ?? .dead
    }

    /// `WriterLease.takeOver`: a fresh lock file renamed over `D/writer.lock` and the new epoch
    /// recorded in one transaction, which waits for SQLite's write lock.
    func takeOver(
        _ seen: TakeoverWatch.Observation, silentNanos: UInt64, pursued: Bool, by taker: SimulatedParticipant,
        _ acquisition: inout SimulatedParticipant.Acquisition
    ) -> AcquireMachine.TakeoverResult {
        let heldEpoch = seen.record?.epoch ?? kernel.storeEpoch
        let holderPid = seen.record?.pid ?? 0
        let holder = participants.first { $0.pid == holderPid }
        if let writing = kernel.writeLock, writing != taker.index {
            let state = holderState(pid: holderPid)
            return .blocked(
                WriterLease.Blocked(
                    name: holder?.name ?? "pid \(holderPid)", pid: holderPid, holderState: state,
                    message:
                        "\(holder?.name ?? "the holder") (pid \(holderPid)) is \(state) inside a write transaction"
                ))
        }
        let current = kernel.files[kernel.pathGeneration]
        let same: Bool
        if pursued, let record = current?.record, let before = seen.record {
            same = record.pid == before.pid && record.epoch == before.epoch && record.released == 0
        } else {
            same = visibleContent(current) == seen.content
        }
        guard seen.generation == SimulatedKernel.identity(kernel.pathGeneration), same else { return .moved }
        // No holder that was running and beating is taken over, unless it was frozen within a
        // term, or the takeover was decided while it was (a pursued takeover completes even if
        // the holder was thawed meanwhile: its next write fails its fence).
        let decidedFrozen = pursued && (seen.holderState == .stopped || seen.holderState == .hung)
        if let holder, holder.state == .running, holder.holding?.lease.generation == kernel.pathGeneration,
            now - holder.lastBeat < Self.termNanos, !decidedFrozen,
            holder.lastFrozen.map({ now - $0 > Self.termNanos }) ?? true
        {
            fail(
                "no running holder taken over",
                "\(taker.name) took the lease over from \(holder.name) (pid \(holderPid)), running, whose last beat was \((now - holder.lastBeat) / 1_000_000) ms ago"
            )
        }
        let epoch = max(kernel.storeEpoch, heldEpoch) + 1
        kernel.lastGeneration += 1
        let generation = kernel.lastGeneration
        kernel.files[generation] = SimulatedKernel.LockFile()
        let descriptor = kernel.open(by: taker.index, generation: generation)
        kernel.files[generation]?.holder = descriptor
        kernel.pathGeneration = generation
        record(epoch: epoch, by: taker, at: now)
        takeovers += 1
        let lease = SimulatedLease(
            epoch: epoch, generation: generation, descriptor: descriptor, takenOver: true)
        hold(lease, by: taker, takenOver: heldEpoch)
        acquisition.taken = lease
        lockFileReplaced()
        return .taken
    }

    /// `D/writer.lock` names another file: every participant hears of it, every wait wakes.
    func lockFileReplaced() {
        for participant in participants where participant.state != .dead {
            send(participant, .lockFileChanged)
            ring(participant)
        }
    }

    /// The store's lease epoch moves to `epoch`, recorded by `participant`.
    func record(epoch: Int64, by participant: SimulatedParticipant, at acquired: UInt64) {
        if epoch <= kernel.storeEpoch {
            fail("epochs increase", "\(participant.name) recorded epoch \(epoch) over \(kernel.storeEpoch)")
        }
        if let earlier = kernel.epochHolders[epoch], earlier != participant.index {
            fail(
                "one writer per epoch",
                "epoch \(epoch) recorded by \(participants[earlier].name) and then \(participant.name)")
        }
        kernel.storeEpoch = epoch
        kernel.epochHolders[epoch] = participant.index
        handOvers += 1
        // The take closes what the holding before left open, at its own time; one that ended
        // by itself must have ended before it. (Only the last interval can be open: each take
        // closes the one before.)
        if let last = kernel.lastInterval {
            if let released = last.released, released > acquired {
                fail(
                    "lease intervals never overlap",
                    "\(participant.name) took epoch \(epoch) at \(acquired / 1_000_000) ms, before epoch \(last.epoch)'s release at \(released / 1_000_000) ms"
                )
            }
        }
        kernel.lastInterval = (epoch, acquired, nil)
    }

    /// A release recorded by its holder closes its row of the history, unless the next take
    /// closed it already.
    func recordRelease(of epoch: Int64) {
        guard let last = kernel.lastInterval, last.epoch == epoch, last.released == nil else { return }
        kernel.lastInterval?.released = now
    }

    /// The frozen-holder policy on `pid`, when it is a participant inside a write transaction.
    func unfreeze(pid: Int32, policy: FrozenHolder.Policy) -> String? {
        guard let holder = participants.first(where: { $0.pid == pid }), kernel.writeLock == holder.index,
            holder.state == .stopped || holder.state == .hung
        else { return nil }
        switch policy {
        case .thaw:
            thaw(holder)
            return "resumed it"
        case .kill:
            kill(holder)
            return "killed it"
        case .wait:
            return nil
        }
    }

    // MARK: - The heartbeat

    func hold(_ lease: SimulatedLease, by participant: SimulatedParticipant, takenOver: Int64) {
        participant.holding = SimulatedParticipant.Holding(lease: lease)
        writeRecord(lease, pid: participant.pid, takenOver: takenOver, released: 0)
        participant.lastBeat = now
        schedule(.beat(participant.index, incarnation: participant.incarnation), after: Self.termNanos / 4)
    }

    func writeRecord(_ lease: SimulatedLease, pid: Int32, takenOver: Int64, released: Int64) {
        let record = HeartbeatRecord(
            pid: pid, epoch: lease.epoch, beat: now, termMillis: Self.term.inWholeMilliseconds,
            takenOver: takenOver, released: released)
        kernel.files[lease.generation]?.record = record
    }

    func beat(_ participant: SimulatedParticipant) {
        guard let holding = participant.holding else { return }
        guard holding.lease.generation == kernel.pathGeneration else {
            // The heartbeat finds its file gone from the path: the participant hears of it.
            participant.holding = nil
            send(participant, .lockFileChanged)
            return
        }
        let takenOver = kernel.files[holding.lease.generation]?.record?.takenOver ?? 0
        writeRecord(holding.lease, pid: participant.pid, takenOver: takenOver, released: 0)
        participant.lastBeat = now
        schedule(.beat(participant.index, incarnation: participant.incarnation), after: Self.termNanos / 4)
    }

    func release(_ lease: SimulatedLease, of participant: SimulatedParticipant, released: Bool) {
        if participant.holding?.lease == lease {
            participant.holding = nil
            if released {
                let takenOver = kernel.files[lease.generation]?.record?.takenOver ?? 0
                writeRecord(lease, pid: participant.pid, takenOver: takenOver, released: wallMillis)
            }
        }
        close(lease.descriptor)
    }

    // MARK: - The kernel lock

    /// Closes a descriptor: its lock (if it holds one) goes to a waiter, its wait (if any) ends.
    func close(_ descriptor: Int) {
        guard let generation = kernel.descriptors[descriptor]?.generation else { return }
        kernel.descriptors[descriptor] = nil
        kernel.files[generation]?.waiters.removeAll { $0 == descriptor }
        if kernel.files[generation]?.holder == descriptor {
            kernel.files[generation]?.holder = nil
            grant(generation)
        }
    }

    /// The kernel wakes the waiters of a lock let go: one that can run takes it (the seed picks).
    func grant(_ generation: UInt64) {
        guard let waiters = kernel.files[generation]?.waiters, kernel.files[generation]?.holder == nil else {
            return
        }
        let runnable = waiters.filter {
            guard let owner = kernel.descriptors[$0]?.owner else { return false }
            return participants[owner].state == .running
        }
        guard !runnable.isEmpty else { return }
        let chosen = runnable[Int(random.next() % UInt64(runnable.count))]
        kernel.files[generation]?.waiters.removeAll { $0 == chosen }
        kernel.files[generation]?.holder = chosen
        if let owner = kernel.descriptors[chosen]?.owner { ring(participants[owner]) }
    }
}
