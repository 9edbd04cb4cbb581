import BatonJSON
import BatonStore
import BatonSync
import Testing

/// Drives a manager machine with random events the way `SyncManager` would: each action carried
/// out in order (the run loop's jobs end later, at a step of their own, as real jobs do), the
/// results of its own writes fed back, outside calls (submit, stop, restart, cancel, waits,
/// run() starting and ending, the store failing and healing) in between. After every step it
/// checks the invariants. Each simulation runs up to 1 to 4 jobs at once, its syncs spread over
/// two soups (one sync's a parent-children pair of both), some of them sync ups.
struct ManagerSimulation {
    var machine: Machine
    var random: SplitMix64
    /// Writes fail while the store is failing.
    var failing = false
    /// The run loop was woken and has not looked yet.
    var woken = false
    /// The pause of the retry the machine asked for, not yet fired.
    var retryPending: Duration?
    /// Every job accepted into the queue, and the final statuses each ended with.
    var accepted: [Machine.JobID: Machine.Job] = [:]
    var ends: [Machine.JobID: [String]] = [:]
    /// The jobs the run loop started running (never twice).
    var started: Set<Machine.JobID> = []
    /// Syncs with a caller in `waitForSync`, and callers in `waitUntilStopped`.
    var syncWaiters: Set<Int64> = []
    var stopWaiters = 0
    /// A `restart` that waits for the stop to complete.
    var restartWaiting = false
    var seen: Set<String> = []
    var trace: [String] = []

    static let syncIds: [Int64] = [1, 2, 3, 4]
    /// Sync 1 and 2 write soup a, 3 soup b, 4 both (a parent-children pair); 2 is a sync up.
    static let soups: [Int64: Set<String>] = [1: ["a"], 2: ["a"], 3: ["b"], 4: ["a", "b"]]
    static let syncUps: Set<Int64> = [2]

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
        machine = Machine(concurrency: random.int(1...4))
        _ = feed(.runStarted)
    }

    var traceText: String { trace.suffix(30).joined(separator: "\n") }

    /// One outside event and everything it sets off.
    mutating func step() {
        switch random.int(0...19) {
        case 0, 1, 2: submit(kind: random.chance(0.85) ? .run : .cleanGhosts)
        case 3, 4, 5: lookForWork()
        case 6, 7, 8: endHeldJob()
        case 9: stop()
        case 10: restart()
        case 11: _ = feed(.cancel(syncId: Self.syncIds.randomElement(using: &random)!))
        case 12: _ = feed(.listenerCancelled(syncId: Self.syncIds.randomElement(using: &random)!))
        case 13: failing = random.chance(0.4)
        case 14, 15: fireRetry()
        case 16:
            if random.chance(0.8) {
                flush()
            } else {
                _ = feed(.accessChanged)
                #expect(machine.kept.isEmpty, "a new access leaves kept changes to recovery")
            }
        case 17:
            let id = Self.syncIds.randomElement(using: &random)!
            if machine.isActive(id) { syncWaiters.insert(id) }
        case 18:
            if machine.isStopping { stopWaiters += 1 }
        default:
            if random.chance(0.2) {
                _ = feed(.setConcurrency(random.int(1...4)))
            } else {
                runLoopChange()
            }
        }
        checkStep()
    }

    /// Stops, lets every write land, and drives the run loop and the retry until nothing is
    /// left; then every accepted job has ended exactly once and nothing is kept.
    mutating func finish() {
        failing = false
        if !machine.isRunLoopRunning { _ = feed(.runStarted) }
        for _ in 0..<200 where !(machine.isStopped && machine.kept.isEmpty && retryPending == nil) {
            // A restart that waited for the stop accepts again once it completes: stop again.
            if machine.state == .acceptingSyncs { stop() }
            lookForWork()
            endHeldJob()
            fireRetry()
            checkStep()
        }
        #expect(machine.isStopped && machine.isIdle, "a stop completes\n\(traceText)")
        #expect(machine.kept.isEmpty && machine.retryPause == nil, "every kept change lands\n\(traceText)")
        #expect(retryPending == nil)
        for (id, job) in accepted {
            #expect(ends[id]?.count == 1, "\(job) ended \(ends[id] ?? []) times\n\(traceText)")
        }
        #expect(syncWaiters.isEmpty && stopWaiters == 0, "every waiter resumed")
    }

    mutating func submit(kind: Machine.Job.Kind) {
        let syncId = Self.syncIds.randomElement(using: &random)!
        guard machine.refusal == nil else { return }
        if kind == .run {
            guard !machine.isRunActive(syncId) else { return }
            _ = feed(.submitting(syncId: syncId))
            #expect(machine.kept[syncId] == nil && !machine.mustStop(syncId))
            guard write(.start(syncState(syncId, .new))) else { return }
            // A stop may arrive while `running` is written.
            if random.chance(0.15) { stop() }
        }
        let job = machine.makeJob(
            syncId: syncId, name: nil, kind: kind, soups: Self.soups[syncId]!,
            alone: kind == .run && Self.syncUps.contains(syncId))
        let actions = feed(.submitted(job))
        if actions != [.endUnqueued(job)] { accepted[job.id] = job }
    }

    mutating func lookForWork() {
        guard woken || random.chance(0.2) else { return }
        woken = false
        _ = feed(.runLoopReady)
    }

    /// One of the jobs the run loop holds ends: a run as its work went (stopped when it had to
    /// stop), a job a stop reached `stopped`, a clean resync ghosts with no status.
    mutating func endHeldJob() {
        guard let job = machine.held.randomElement(using: &random) else { return }
        var final: SyncState?
        if job.kind == .run {
            let unrun = !started.contains(job.id)
            let change: StatusChange
            // A run told to stop usually reports it; it may have completed just before it checked.
            if unrun || (machine.mustStop(job.syncId) && random.chance(0.9)) {
                change = .stopped(syncState(job.syncId))
            } else if random.chance(0.2) {
                change = .failed(syncState(job.syncId), error: "HTTP 500")
            } else {
                change = .done(syncState(job.syncId))
            }
            _ = write(change)
            final = change.state
            ends[job.id, default: []].append(change.state!.status.rawValue)
        } else {
            ends[job.id, default: []].append("ghosts")
        }
        _ = feed(.jobEnded(job.id, final: final))
    }

    mutating func stop() {
        let before = machine
        let actions = feed(.stop)
        for action in actions {
            switch action {
            case .interrupt, .wakeRunLoop, .resumeStopWaiters: break
            default: Issue.record("a stop is answered with \(action): it must not wait")
            }
        }
        if before.state != .acceptingSyncs { #expect(machine.state == before.state) }
        if before.state == .acceptingSyncs, !before.isIdle { seen.insert("stop with jobs") }
    }

    mutating func restart() {
        let before = machine
        let actions = feed(.restart)
        if before.isStopping {
            #expect(actions == [.waitForStop] && machine == before, "a restart while stopping waits")
            restartWaiting = true
            seen.insert("restart waits")
        } else {
            #expect(actions.isEmpty)
            #expect(machine.state == .acceptingSyncs)
        }
    }

    mutating func fireRetry() {
        guard retryPending != nil else { return }
        retryPending = nil
        _ = feed(.retryDue)
        _ = feed(.retryRoundEnded)
    }

    mutating func flush() {
        _ = feed(.flushAsked)
    }

    mutating func runLoopChange() {
        if machine.isRunLoopRunning {
            // run() returns only once its jobs ended (it awaits them).
            guard machine.held.isEmpty, random.chance(0.3) else { return }
            _ = feed(.runEnded)
            #expect(feed(.runEnded) == [])
        } else {
            _ = feed(.runStarted)
            #expect(feed(.runStarted) == [.refuseRun])
        }
    }

    /// Writes a status change as `changeStatus` does and feeds the result; true when it landed.
    mutating func write(_ change: StatusChange) -> Bool {
        guard failing else {
            _ = feed(.changeWritten(change))
            return true
        }
        _ = feed(.changeFailed(change))
        if !change.isStart {
            #expect(machine.kept[change.syncId] == change, "a failed end is kept")
            seen.insert("kept")
        }
        return false
    }

    /// Feeds `event`, checks what must hold of its answer, and carries it out.
    mutating func feed(_ event: Machine.Event) -> [Machine.Action] {
        let before = machine
        let actions = machine.handle(event)
        trace = trace.suffix(60) + ["\(event) -> \(actions)"]
        if event == .runStarted, actions.isEmpty { woken = true }  // its loop looks at once
        for action in actions { carryOut(action, before: before) }
        return actions
    }

    mutating func carryOut(_ action: Machine.Action, before: Machine) {
        switch action {
        case .run(let job):
            #expect(before.state == .acceptingSyncs && before.endingUnrun.isEmpty)
            let place = before.queue.firstIndex(of: job)
            #expect(place != nil, "\(job) was not queued")
            // Nothing it conflicts with runs, nor waits before it.
            #expect(
                !before.held.contains(where: job.conflicts), "\(job) beside a conflicting job\n\(traceText)")
            #expect(
                !before.queue[..<(place ?? 0)].contains(where: job.conflicts),
                "\(job) overtook a conflicting job\n\(traceText)")
            #expect(machine.held.contains(job) && machine.held.count <= machine.concurrency)
            #expect(started.insert(job.id).inserted, "\(job) started twice")
            seen.insert("run")
            if machine.held.count > 1 { seen.insert("several at once") }
        case .endUnrun(let job):
            #expect(before.endingUnrun.first == job && before.held.isEmpty && machine.held == [job])
            #expect(machine.state == .stopRequested)
            seen.insert("endUnrun")
        case .endUnqueued(let job):
            #expect(machine.refusal != nil && !machine.jobs.contains(job))
            if job.kind == .run { _ = write(.stopped(syncState(job.syncId))) }
            seen.insert("endUnqueued")
        case .interrupt(let id):
            #expect(machine.held.contains { $0.id == id }, "only a job held is interrupted")
            seen.insert("interrupt")
        case .wakeRunLoop:
            #expect(!machine.isIdle)
            woken = true
        case .resumeSyncWaiters(let syncId, _):
            #expect(!machine.isActive(syncId), "waiters resume once nothing is left for the sync")
            syncWaiters.remove(syncId)
        case .resumeStopWaiters:
            #expect(machine.isStopped)
            stopWaiters = 0
            seen.insert("stopped")
            if restartWaiting {
                restartWaiting = false
                restart()
            }
        case .retryLater(let pause):
            #expect(retryPending == nil, "one retry at a time")
            #expect(pause > .zero && pause <= Machine.longestRetryPause)
            retryPending = pause
        case .writeAgain(let changes):
            #expect(!changes.isEmpty && changes == machine.keptInOrder)
            for change in changes {
                guard failing else {
                    _ = feed(.changeWritten(change))
                    continue
                }
                let accessLost = random.chance(0.1)
                _ = feed(.rewriteFailed(change, accessLost: accessLost))
                if !accessLost { break }
            }
            seen.insert("writeAgain")
        case .refuseRun:
            #expect(before.isRunLoopRunning)
        case .waitForStop:
            #expect(machine.isStopping)
        }
    }

    /// What must hold once a step's cascade is done.
    func checkStep() {
        let ids = machine.jobs.map(\.id)
        #expect(Set(ids).count == ids.count, "a job is held once\n\(traceText)")
        for job in machine.jobs { #expect(accepted[job.id] == job, "only accepted jobs are held") }
        for (id, job) in accepted where !machine.jobs.contains(job) {
            #expect(ends[id]?.count == 1, "a job no longer held ended once: \(job)\n\(traceText)")
        }
        switch machine.state {
        case .acceptingSyncs:
            #expect(machine.endingUnrun.isEmpty)
        case .stopRequested:
            #expect(machine.queue.isEmpty, "a stop takes the queue")
            #expect(!machine.isIdle, "a stop completes as soon as nothing is left\n\(traceText)")
        case .stopped:
            #expect(machine.isIdle, "stopped: no job held\n\(traceText)")
            for id in Self.syncIds { #expect(!machine.isActive(id)) }
        }
        #expect(machine.isStopping == (machine.state == .stopRequested))
        #expect(machine.isStopped == (machine.state == .stopped))
        // Held jobs never conflict (a job starts only below the concurrency: checked at `run`).
        for (index, job) in machine.held.enumerated() {
            #expect(
                !machine.held[(index + 1)...].contains(where: job.conflicts),
                "conflicting jobs held\n\(traceText)")
        }
        // Work the run loop could start now, or a stop's queued jobs to end with nothing held:
        // the run loop was woken for it.
        if machine.isRunLoopRunning, !woken {
            var copy = machine
            let startable = copy.handle(.runLoopReady)
            #expect(startable.isEmpty, "work left with the run loop asleep: \(startable)\n\(traceText)")
        }
        // A kept change is always on its way: a retry is under way.
        if !machine.kept.isEmpty { #expect(machine.retryPause != nil && retryPending != nil) }
        #expect(machine.retryPause == retryPending, "the machine and the retry agree\n\(traceText)")
        for change in machine.kept.values { #expect(!change.isStart, "a running is never kept") }
        for id in syncWaiters {
            #expect(machine.isActive(id), "a waiter of an idle sync was left\n\(traceText)")
        }
        if stopWaiters > 0 { #expect(machine.isStopping) }
        if restartWaiting { #expect(machine.isStopping) }
    }
}

@Suite("Manager state machine: invariants over random event sequences (no I/O)")
struct ManagerStateMachinePropertyTests {
    @Test(
        "up to N jobs at once, none beside or before one it conflicts with; a stop completes; every job ends once with one status; kept changes land",
        arguments: [UInt64(1), 2, 3, 4, 5, 42, 9173, 130_363, 8_675_309])
    func randomSequences(seed: UInt64) {
        var seen: Set<String> = []
        for run in 0..<40 {
            var simulation = ManagerSimulation(seed: seed &* 1_000 &+ UInt64(run))
            for _ in 0..<300 { simulation.step() }
            simulation.finish()
            seen.formUnion(simulation.seen)
        }
        for reached in [
            "run", "several at once", "interrupt", "endUnrun", "endUnqueued", "stop with jobs",
            "restart waits", "stopped", "kept", "writeAgain",
        ] {
            #expect(seen.contains(reached), "no run reached \(reached)")
        }
    }
}
