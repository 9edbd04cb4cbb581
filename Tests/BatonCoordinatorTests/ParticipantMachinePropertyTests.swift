import BatonJSON
import BatonSync
import Testing

@testable import BatonCoordinator

/// Drives a machine with random events the way `Participant` would: each action carried out in
/// order, the results of its own actions queued behind the events not yet fed (first in, first
/// out), outside events (lifecycle, lease, syncs, timers, the manager's stop, edits, shutdown) in
/// between. After every step it checks the invariants.
struct MachineSimulation {
    var machine: TestMachine
    var random: SplitMix64
    /// The wall clock (ms since 1970) and the monotonic one (ms), moved on by each step.
    var now: Int64 = 1_700_000_000_000
    var monotonic: Double = 0
    /// Timers scheduled and neither fired nor cancelled, and those cancelled.
    var pending: Set<TestMachine.TimerID> = []
    var cancelled: [TestMachine.TimerID] = []
    /// A wait for the lease under way (`startAcquiring` carried out, not yet answered).
    var acquiring = false
    var lastEpoch: Int64 = 0
    /// Leases let go, and holdings whose first write failed its fence: none may be used again.
    var dead: Set<TestLease> = []
    var stale: Set<TestLease> = []
    var edits = 0
    var shutDown = false
    var exited = false
    /// The stop under way: `stopManager` carried out, its release not yet; the manager's stop
    /// awaited (`managerStopped` not yet fed); its deadline timer fired; its page save ended;
    /// its checkpoint asked for.
    var stops = 0
    var awaitingStop = false
    var deadlineFired = false
    var pageSaveEnded = false
    var checkpointed = false
    /// Configured syncs that failed as writer and were not run again yet.
    var owed: Set<String> = []
    var failedThisStep: Set<String> = []
    /// What the run went through, so that a run that exercises nothing fails.
    var seen: Set<String> = []
    /// The latest events and their actions, for the message of a failed expectation.
    var trace: [String] = []

    static let names = ["accounts", "contacts", "unconfigured"]

    init(seed: UInt64, retryDelay: Duration?, saveGrace: Duration?) {
        random = SplitMix64(seed: seed)
        machine = TestMachine(
            configuredSyncs: ["accounts", "contacts"], retryDelay: retryDelay,
            maxRetryDelay: .milliseconds(200), stopDeadline: .milliseconds(50), saveGrace: saveGrace)
    }

    /// One outside event (or a local edit beginning) and everything it sets off.
    mutating func step(allowShutdown: Bool) {
        now += Int64(random.int(0...50))
        monotonic += Double(random.int(0...50))
        failedThisStep = []
        let wasAwaitingStop = awaitingStop
        guard let event = outsideEvent(allowShutdown: allowShutdown) else { return checkStep() }
        let before = machine
        feed(event)
        switch event {
        case .released, .syncsStopped, .managerStopping:
            // Results of actions never asked for (or asked for and answered already).
            #expect(machine == before, "\(event) out of turn changes nothing")
        case .managerStopped where !wasAwaitingStop:
            #expect(machine == before, "\(event) out of turn changes nothing")
        default: break
        }
        checkStep()
    }

    /// Shuts down if it has not, ends every edit, and checks that the machine exited.
    mutating func finish() {
        failedThisStep = []
        if !shutDown { feed(.shutdown) }
        if awaitingStop {
            awaitingStop = false
            feed(.managerStopped)
        }
        while edits > 0 {
            edits -= 1
            feed(.localEditEnded)
        }
        checkStep()
        #expect(exited, "a shutdown always ends in exit")
        #expect(machine.phase == .finished)
        #expect(pending.isEmpty, "no timer outlives the participant")
        #expect(!acquiring, "no wait for the lease outlives the participant")
        #expect(stops == 0, "a stop always ends in exactly one release")
        #expect(!awaitingStop, "no wait for the manager's stop outlives the participant")
        // Whatever comes afterwards changes nothing.
        for _ in 0..<50 {
            let before = machine
            guard let event = outsideEvent(allowShutdown: true) else { continue }
            let actions = machine.handle(event)
            if case .leaseGranted(let lease, _) = event {
                #expect(actions == [.releaseUnused(lease)])
            } else {
                #expect(actions == [], "\(event)")
            }
            #expect(machine == before)
        }
    }

    mutating func outsideEvent(allowShutdown: Bool) -> TestMachine.Event? {
        switch random.int(0...24) {
        case 0, 1:
            return .lifecycle(random.chance(0.65) ? .foreground : .background)
        case 2, 3:
            if acquiring {
                acquiring = false
                lastEpoch += 1
                return .leaseGranted(TestLease(epoch: lastEpoch), waitMillis: Double(random.int(0...100)))
            }
            // The lease only grants its current holding; while not waiting, a repeat of the one
            // held or of one let go may still arrive.
            guard machine.phase != .waiting else { return nil }
            let old =
                random.chance(0.5)
                ? machine.phase.lease : dead.sorted { $0.epoch < $1.epoch }.randomElement(using: &random)
            return old.map { .leaseGranted($0, waitMillis: 0) }
        case 4:
            guard acquiring || random.chance(0.1) else { return nil }
            acquiring = false
            return .leaseFailed("disk I/O error")
        case 5:
            return .leaseLost(takenOver: random.chance(0.5), successor: nil)
        case 6:
            return .leaseBlocked(random.chance(0.5) ? blockedHolder : nil)
        case 7:
            return .higherPriorityWaiting
        case 8, 9:
            let name = Self.names.randomElement(using: &random)!
            let error = random.chance(0.8) ? "HTTP 500" : nil
            return .syncFailed(
                name: name, error: error, storeProblem: random.chance(0.05) ? "deleted" : nil, at: now)
        case 10:
            return .syncFinished(Self.names.randomElement(using: &random)!)
        case 11:
            if random.chance(0.2) { return .storeLost("replaced") }
            if random.chance(0.1) { return .storeBack }
            return .managerState(random.chance(0.5) ? .stopped : .acceptingSyncs)
        case 12, 13, 14:
            guard let timer = pending.sorted(by: { $0.serial < $1.serial }).randomElement(using: &random)
            else {
                return nil
            }
            return .timerFired(timer)
        case 15:
            guard let timer = cancelled.randomElement(using: &random) else { return nil }
            return .timerFired(timer)
        case 16, 17:
            let before = machine
            if let lease = machine.beginLocalEdit() {
                #expect(before.phase == .writer(lease), "an edit only as writer, under its lease")
                edits += 1
                seen.insert("edit")
            } else {
                #expect(machine == before)
            }
            return nil
        case 18, 19:
            guard edits > 0 else { return nil }
            edits -= 1
            return .localEditEnded
        case 20:
            return [
                .publishRequested, .lifecycleIgnored("is empty", at: now),
                .lifecycleIgnored("holds neither 'foreground' nor 'background'", at: now), .lifecycleMissing,
                .released, .syncsStopped, .managerStopping(.stopRequested, began: 0), .syncStateChanged,
            ].randomElement(using: &random)
        case 21, 22:
            guard awaitingStop else { return random.chance(0.1) ? .managerStopped : nil }
            guard random.chance(0.5) else { return nil }
            awaitingStop = false
            return .managerStopped
        case 23:
            let problem = random.chance(0.1) ? "deleted" : nil
            return [
                .lockFileChanged, .storeChecked(problem), .directoryRead(storeProblem: problem),
                .directoryRead(storeProblem: nil),
            ].randomElement(using: &random)
        default:
            guard allowShutdown, random.chance(0.3) else { return nil }
            return .shutdown
        }
    }

    /// Feeds `event`, then the results of its actions, as the participant does: those of one
    /// event's actions, all carried out, go ahead of the events still pending; nothing after
    /// `exit`.
    mutating func feed(_ event: TestMachine.Event) {
        var pending = [event]
        while !exited, !pending.isEmpty {
            pending.insert(contentsOf: take(pending.removeFirst()), at: 0)
        }
    }

    /// Feeds one event, carries out its actions in order, checks what must hold after it, and
    /// returns the results of the actions.
    mutating func take(_ event: TestMachine.Event) -> [TestMachine.Event] {
        let before = machine
        let shuttingDownBefore = machine.shuttingDown
        let actions = machine.handle(event)
        let line = "\(event) -> \(actions)"
            .replacing("BatonCoordinator.ParticipantMachine<BatonCoordinatorTests.TestLease>.", with: "")
        trace = trace.suffix(40) + [line]

        if case .timerFired(let timer) = event {
            if pending.remove(timer) == nil {
                #expect(actions.isEmpty, "a cancelled timer changes nothing")
                #expect(machine == before)
                seen.insert("stale timer")
            } else if timer.kind == .stopDeadline {
                deadlineFired = true
            }
        }
        if case .syncFailed(let name, _, _, _) = event, case .writer = before.phase,
            machine.retryDelay != nil, machine.configuredSyncs.contains(name)
        {
            owed.insert(name)
            failedThisStep.insert(name)
        }
        if case .syncFailed(let name, _, let storeProblem?, _) = event, machine.configuredSyncs.contains(name)
        {
            // Its store is gone: no retry (it would fail again); the problem says why.
            #expect(actions.scheduled.allSatisfy { $0.id.kind != .retry(name) })
            if !before.isStoreLost { #expect(machine.problem == .storeLost(storeProblem)) }
            #expect(machine.isStoreLost)
            if case .writer = before.phase { #expect(machine.phase.name != .writer) }
        }
        if case .syncFinished(let name) = event { owed.remove(name) }
        if case .shutdown = event { shutDown = true }
        // The refused signal is what the lifecycle file last held that was refused, until a
        // valid signal or a removed file; a refusal read again keeps its first time.
        switch event {
        case .lifecycleIgnored(let reason, let at) where before.phase != .finished:
            #expect(machine.refusedSignal?.reason == reason)
            if before.refusedSignal?.reason == reason {
                #expect(machine.refusedSignal == before.refusedSignal && actions.isEmpty)
            } else {
                #expect(machine.refusedSignal?.at == at)
                seen.insert("refused signal")
            }
        case .lifecycle, .lifecycleMissing:
            if before.phase != .finished { #expect(machine.refusedSignal == nil) }
        default:
            #expect(
                machine.refusedSignal == before.refusedSignal, "only lifecycle input changes it: \(event)")
        }
        // A lost store file holds off the lease: nothing asks for it until the file is back.
        if case .storeLost = machine.problem { #expect(!actions.contains(.startAcquiring)) }

        // Phase and lease agree; the lease held is never one let go; edits only under a lease.
        let holding: Set<ParticipantPhase> = [.writer, .releasing, .fenced]
        #expect((machine.phase.lease != nil) == holding.contains(machine.phase.name))
        if let lease = machine.phase.lease { #expect(!dead.contains(lease)) }
        if machine.localEdits > 0 { #expect(machine.phase.lease != nil) }
        if machine.admitsEdits { #expect(machine.phase.name == .writer) }
        seen.insert(machine.phase.name.rawValue)

        // A change of what the status shows is published.
        func shown(_ machine: TestMachine) -> [String] {
            [
                "\(machine.phase.name)", "\(String(describing: machine.phase.lease))",
                "\(String(describing: machine.problem))", "\(machine.retrying)",
                "\(String(describing: machine.managerState))",
                "\(String(describing: machine.refusedSignal))",
            ]
        }
        if shown(machine) != shown(before) { #expect(actions.contains(.publish), "\(event) -> \(actions)") }

        var results: [TestMachine.Event] = []
        for (index, action) in actions.enumerated() {
            if shuttingDownBefore { checkAfterShutdown(action) }
            if case .shutdown = event { checkShutdownAnswer(action) }
            results += carryOut(action, last: index == actions.count - 1)
        }
        return results
    }

    /// Carries out `action` as the participant would; returns the events that say how it went.
    mutating func carryOut(_ action: TestMachine.Action, last: Bool) -> [TestMachine.Event] {
        switch action {
        case .publish:
            return [random.chance(0.1) ? .publishFailed("ENOSPC") : .published]
        case .record:
            break
        case .startAcquiring:
            #expect(!acquiring, "one wait for the lease at a time")
            #expect(machine.phase == .waiting)
            acquiring = true
        case .cancelAcquiring:
            acquiring = false
        case .becomeWriter(let lease):
            #expect(machine.phase == .writer(lease))
            #expect(!dead.contains(lease), "a lease let go is never written with")
            #expect(!stale.contains(lease), "a holding with a dead fence is never started again")
            seen.insert("becomeWriter")
            let roll = random.int(0...19)
            if roll >= 18 { stale.insert(lease) }
            return [
                .managerState(.acceptingSyncs),
                roll < 15
                    ? .writerStarted : roll < 18 ? .writerStartFailed("SQLITE_FULL") : .writerStartStale,
            ]
        case .resumeEditWaiters:
            #expect(machine.phase.name == .writer)
        case .runSync(let name):
            #expect(machine.phase.name == .writer)
            owed.remove(name)
            seen.insert("runSync")
            if random.chance(0.25) {
                return [.syncFailed(name: name, error: "could not write running", storeProblem: nil, at: now)]
            }
        case .stopManager, .awaitManagerStop, .endPageSaveEarly, .interruptStore, .flushUnpersisted,
            .copyBackCompletely, .checkpointAfterRelease, .dropWriteAccess:
            return carryOutStop(action)
        case .releaseLease(let lease, _, let recordRelease, _):
            #expect(machine.localEdits == 0, "nothing commits after the lease is let go")
            #expect(machine.phase.lease == lease)
            #expect(recordRelease == (machine.phase.name != .fenced))
            #expect(stops == 1 && checkpointed, "a release ends the stop under way, after its checkpoint")
            stops = 0
            if machine.phase.name == .fenced { seen.insert("fenced release") }
            dead.insert(lease)
            return [.released]
        case .releaseUnused(let lease):
            #expect(machine.phase.lease != lease)
            dead.insert(lease)
            seen.insert("releaseUnused")
        case .scheduleTimer(let timer, let delay):
            #expect(pending.insert(timer).inserted)
            switch timer.kind {
            case .saveGrace, .stopDeadline:
                #expect(machine.waitsForManagerStop, "a stop's timer only while waiting for the manager")
                #expect(delay > .zero && delay <= machine.stopDeadline)
            case .retry, .recovery:
                #expect(delay > .zero && delay <= machine.maxRetryDelay)
            }
        case .cancelTimer(let timer):
            #expect(pending.remove(timer) != nil, "only a pending timer is cancelled")
            cancelled.append(timer)
        case .checkStore:
            #expect(machine.isStoreLost, "the store is checked only while lost")
            #expect(machine.phase.lease == nil, "never reopened under a lease")
            seen.insert("checkStore")
            switch random.int(0...3) {
            case 0: return [.storeBack]
            case 1: return [.storeReopened("replaced")]
            default: return [.storeReopenFailed("no store at the path")]
            }
        case .checkLockFile(let lease):
            #expect(machine.phase.lease == lease, "only the holding's own lock file is checked")
            #expect(machine.phase.name != .fenced)
            seen.insert("checkLockFile")
            return random.chance(0.5) ? [.leaseLost(takenOver: random.chance(0.5), successor: nil)] : []
        case .checkPriority:
            #expect(machine.phase.name == .writer)
            seen.insert("checkPriority")
            return random.chance(0.3) ? [.higherPriorityWaiting] : []
        case .refreshWriterHint:
            #expect(machine.phase.lease == nil, "the hint only without the lease")
        case .readManagerState:
            #expect(!machine.waitsForManagerStop, "the manager is not waited for while it stops")
            return [.managerState(random.chance(0.5) ? .stopped : .acceptingSyncs)]
        case .exit:
            #expect(!exited)
            #expect(last, "exit is the last action")
            #expect(machine.phase == .finished)
            exited = true
        }
        return []
    }

    /// The stop's steps: one stop at a time, each in its turn; the store interrupted only past
    /// the deadline; no flush past it; one checkpoint, the complete copy-back when the store
    /// was lost.
    mutating func carryOutStop(_ action: TestMachine.Action) -> [TestMachine.Event] {
        let release = machine.release
        #expect(release != nil, "a stop's step only while handing the lease over: \(action)")
        switch action {
        case .stopManager:
            #expect(release?.stop == .requested)
            #expect(stops == 0, "one stop at a time")
            (stops, deadlineFired, pageSaveEnded, checkpointed) = (1, false, false, false)
            seen.insert("stop")
            return [.managerStopping(.stopRequested, began: monotonic)]
        case .awaitManagerStop:
            #expect(!awaitingStop && machine.waitsForManagerStop)
            awaitingStop = true
        case .endPageSaveEarly:
            #expect(machine.waitsForManagerStop && !pageSaveEnded, "a page save is ended once, in the wait")
            pageSaveEnded = true
            seen.insert("endPageSaveEarly")
        case .interruptStore:
            #expect(
                deadlineFired && machine.waitsForManagerStop,
                "the store is interrupted only past the deadline")
            seen.insert("interruptStore")
        case .flushUnpersisted:
            #expect(!deadlineFired, "no flush past the deadline")
            #expect(!awaitingStop, "a flush once the manager stopped")
            seen.insert("flushUnpersisted")
        case .copyBackCompletely, .checkpointAfterRelease:
            #expect(!awaitingStop && !checkpointed, "one checkpoint, once the manager stopped")
            #expect((action == .copyBackCompletely) == (release?.reason == .storeLost))
            checkpointed = true
            if action == .copyBackCompletely { seen.insert("copyBack") }
        case .dropWriteAccess:
            #expect(checkpointed)
            return [.managerState(.stopped), .syncsStopped]
        default:
            Issue.record("not a stop's step: \(action)")
        }
        return []
    }

    /// Once shutting down, nothing new starts: only the hand-back and the status.
    func checkAfterShutdown(_ action: TestMachine.Action) {
        switch action {
        case .publish, .record, .cancelTimer, .cancelAcquiring, .releaseLease, .releaseUnused, .exit: break
        // The hand-back's stop goes on, and what is read meanwhile.
        case .awaitManagerStop, .endPageSaveEarly, .interruptStore, .flushUnpersisted, .copyBackCompletely,
            .checkpointAfterRelease, .dropWriteAccess, .checkLockFile, .refreshWriterHint, .readManagerState:
            break
        case .scheduleTimer(let timer, _):
            let allowed: [TestMachine.TimerID.Kind] = [.recovery(.publish), .saveGrace, .stopDeadline]
            #expect(allowed.contains(timer.kind), "after shutdown: \(action)")
        default:
            Issue.record("after shutdown: \(action)")
        }
    }

    func checkShutdownAnswer(_ action: TestMachine.Action) {
        switch action {
        case .startAcquiring, .becomeWriter, .runSync, .resumeEditWaiters, .scheduleTimer:
            Issue.record("a shutdown answered with \(action)")
        default: break
        }
    }

    /// What must hold once the step's cascade is done.
    mutating func checkStep() {
        #expect(machine.pendingTimers == pending, "the machine and the interpreter agree on the timers")
        #expect(machine.localEdits == edits)
        // Each timer belongs to a phase: retries and writer-start recoveries to the writer, the
        // lease recovery to a wait.
        for timer in pending {
            switch timer.kind {
            case .retry, .recovery(.writerStart): #expect(machine.phase.name == .writer, "\(timer)")
            case .recovery(.lease): #expect(machine.phase == .waiting, "\(timer)")
            case .recovery(.publish): break
            case .recovery(.store): #expect(machine.isStoreLost && machine.phase.lease == nil, "\(timer)")
            case .saveGrace, .stopDeadline: #expect(machine.waitsForManagerStop, "\(timer)")
            }
        }
        #expect(
            awaitingStop == machine.waitsForManagerStop,
            "the manager's stop is awaited exactly while waited for")
        if machine.release == nil { #expect(stops == 0, "no stop outside a release") }
        // A lost store is always on its way back: a check pending, or a lease still to let go.
        if machine.isStoreLost, !machine.shuttingDown, machine.phase.lease == nil {
            #expect(
                pending.contains { $0.kind == .recovery(.store) },
                "a lost store with no check scheduled\n\(trace.joined(separator: "\n"))")
        }
        if machine.phase.name != .writer { owed.formIntersection(failedThisStep) }
        for name in owed {
            let retry = pending.contains { $0.kind == .retry(name) }
            #expect(
                retry || machine.problem != nil,
                "failed sync \(name): no retry and no problem\n\(trace.joined(separator: "\n"))")
        }
        if machine.phase.name != .writer { owed = [] }
    }
}

@Suite("Participant machine: invariants over random event sequences (no I/O)")
struct ParticipantMachinePropertyTests {
    @Test(
        "never writer without a lease, timers agree, failed syncs retried or a problem shown, shutdown exits",
        arguments: [UInt64(1), 2, 3, 4, 5, 42, 9173, 130_363, 8_675_309])
    func randomSequences(seed: UInt64) {
        var seen: Set<String> = []
        for run in 0..<40 {
            let retryDelay: Duration? = run % 5 == 4 ? nil : .milliseconds(10)
            let saveGrace: Duration? = [nil, .zero, .milliseconds(20), .milliseconds(80)][run % 4]
            var simulation = MachineSimulation(
                seed: seed &* 1_000 &+ UInt64(run), retryDelay: retryDelay, saveGrace: saveGrace)
            let steps = 400
            for step in 0..<steps {
                simulation.step(allowShutdown: step > steps * 3 / 4)
                if simulation.exited { break }
            }
            simulation.finish()
            seen.formUnion(simulation.seen)
        }
        // The runs went everywhere the rules do.
        for reached in [
            "background", "waiting", "writer", "releasing", "fenced", "finished", "becomeWriter", "runSync",
            "releaseUnused", "stale timer", "edit", "fenced release", "checkStore", "refused signal", "stop",
            "endPageSaveEarly", "interruptStore", "flushUnpersisted", "copyBack", "checkLockFile",
            "checkPriority",
        ] {
            #expect(seen.contains(reached), "no run reached \(reached)")
        }
    }
}
