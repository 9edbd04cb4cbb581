import BatonStore
import BatonSync
import Testing

typealias Machine = ManagerStateMachine

/// A sync's state with this id, as a status change would carry it.
func syncState(_ id: Int64, _ status: SyncStatus = .running) -> SyncState {
    var state = SyncState(
        name: "s\(id)", type: .syncDown, target: [:], options: SyncOptions(), soupName: "soup")
    state.id = id
    state.status = status
    return state
}

/// A machine with `run()` running.
func runningMachine() -> Machine {
    var machine = Machine()
    #expect(machine.handle(.runStarted) == [])
    return machine
}

extension Machine {
    /// Submits a job of the sync, as `SyncManager` does once its `running` committed.
    mutating func submit(_ syncId: Int64, _ kind: Job.Kind = .run) -> (Job, [Action]) {
        let job = makeJob(syncId: syncId, name: "s\(syncId)", kind: kind)
        return (job, handle(.submitted(job)))
    }
}

@Suite("Manager state machine: event sequences (no I/O)")
struct ManagerStateMachineTests {
    @Test("a submitted job runs when the run loop is ready; its end resumes its sync's waiters")
    func submitAndRun() {
        var machine = runningMachine()
        #expect(machine.refusal == nil)
        let (job, actions) = machine.submit(1)
        #expect(actions == [.wakeRunLoop])
        #expect(machine.isActive(1) && machine.isRunActive(1) && !machine.isIdle)
        #expect(machine.handle(.runLoopReady) == [.run(job)])
        #expect(machine.current == job && machine.queue.isEmpty)
        let final = syncState(1, .done)
        #expect(machine.handle(.jobEnded(job.id, final: final)) == [.resumeSyncWaiters(syncId: 1, final)])
        #expect(machine.isIdle && !machine.isActive(1))
        #expect(machine.handle(.runLoopReady) == [])
    }

    @Test("jobs run one at a time in submission order, only inside run()")
    func oneAtATime() {
        var machine = Machine()
        let (first, _) = machine.submit(1)
        let (second, _) = machine.submit(2)
        #expect(machine.handle(.runLoopReady) == [], "run() is not running")
        #expect(machine.handle(.runStarted) == [])
        #expect(machine.handle(.runStarted) == [.refuseRun])
        #expect(machine.handle(.runLoopReady) == [.run(first)])
        #expect(machine.handle(.runLoopReady) == [], "the first still runs")
        #expect(machine.handle(.jobEnded(second.id, final: nil)) == [], "not the job held")
        #expect(machine.current == first)
        _ = machine.handle(.jobEnded(first.id, final: nil))
        #expect(machine.handle(.runLoopReady) == [.run(second)])
        _ = machine.handle(.jobEnded(second.id, final: nil))
        #expect(machine.handle(.runEnded) == [])
        #expect(machine.handle(.runStarted) == [], "run() may run again once it returned")
    }

    @Test(
        "several at once: sync downs of other soups run together; one sharing a soup, and a sync up, wait their turn"
    )
    func severalAtOnce() {
        var machine = Machine(concurrency: 3)
        _ = machine.handle(.runStarted)
        func submit(_ syncId: Int64, _ soups: Set<String>, up: Bool = false, _ kind: Machine.Job.Kind = .run)
            -> Machine.Job
        {
            let job = machine.makeJob(syncId: syncId, name: nil, kind: kind, soups: soups, alone: up)
            #expect(machine.handle(.submitted(job)) == [.wakeRunLoop])
            return job
        }
        let accounts = submit(1, ["accounts"])
        let contacts = submit(2, ["contacts"])
        let accountGhosts = submit(1, ["accounts"], .cleanGhosts)
        let up = submit(3, ["accounts"], up: true)
        let trees = submit(4, ["opportunities"])
        // The ghost cleaning shares accounts' soup and waits; the sync up waits for everything
        // before it; the later sync down may not overtake the sync up.
        #expect(machine.handle(.runLoopReady) == [.run(accounts), .run(contacts)])
        #expect(machine.held == [accounts, contacts] && machine.queue == [accountGhosts, up, trees])
        #expect(machine.handle(.runLoopReady) == [])
        #expect(
            machine.handle(.jobEnded(contacts.id, final: nil)) == [
                .resumeSyncWaiters(syncId: 2, nil), .wakeRunLoop,
            ])
        #expect(machine.handle(.runLoopReady) == [], "nothing may start: accounts still runs")
        #expect(machine.handle(.jobEnded(accounts.id, final: nil)) == [.wakeRunLoop])
        #expect(machine.handle(.runLoopReady) == [.run(accountGhosts)])
        _ = machine.handle(.jobEnded(accountGhosts.id, final: nil))
        #expect(machine.handle(.runLoopReady) == [.run(up)], "the sync up runs alone")
        _ = machine.handle(.jobEnded(up.id, final: nil))
        #expect(machine.handle(.runLoopReady) == [.run(trees)])
        // A stop interrupts every running job; a lower concurrency leaves running ones be.
        let other = submit(5, ["leads"])
        #expect(machine.handle(.runLoopReady) == [.run(other)])
        #expect(machine.handle(.setConcurrency(1)) == [])
        #expect(machine.handle(.stop) == [.interrupt(trees.id), .interrupt(other.id)])
        _ = machine.handle(.jobEnded(trees.id, final: nil))
        #expect(machine.isStopping)
        #expect(machine.handle(.jobEnded(other.id, final: nil)).contains(.resumeStopWaiters))
        #expect(machine.isStopped)
    }

    @Test("a cancel interrupts the sync's running job, not the others running beside it")
    func cancelAmongSeveral() {
        var machine = Machine(concurrency: 2)
        _ = machine.handle(.runStarted)
        let first = machine.makeJob(syncId: 1, name: nil, kind: .run, soups: ["a"])
        let second = machine.makeJob(syncId: 2, name: nil, kind: .run, soups: ["b"])
        _ = machine.handle(.submitted(first))
        _ = machine.handle(.submitted(second))
        #expect(machine.handle(.runLoopReady) == [.run(first), .run(second)])
        #expect(machine.handle(.cancel(syncId: 2)) == [.interrupt(second.id)])
        #expect(machine.mustStop(2) && !machine.mustStop(1))
    }

    @Test("a sync's waiters wait for every job of it: a clean resync ghosts queued behind its run")
    func waitersWaitForEveryJob() {
        var machine = runningMachine()
        let (run, _) = machine.submit(1)
        let (ghosts, _) = machine.submit(1, .cleanGhosts)
        #expect(machine.isRunActive(1))
        _ = machine.handle(.runLoopReady)
        #expect(machine.handle(.jobEnded(run.id, final: syncState(1, .done))) == [.wakeRunLoop])
        #expect(machine.isActive(1) && !machine.isRunActive(1))
        #expect(machine.handle(.runLoopReady) == [.run(ghosts)])
        #expect(machine.handle(.jobEnded(ghosts.id, final: nil)) == [.resumeSyncWaiters(syncId: 1, nil)])
    }

    @Test("a stop interrupts the running job, then ends the queued ones unrun, in order; then stopped")
    func stopWithJobs() {
        var machine = runningMachine()
        let (a, _) = machine.submit(1)
        let (b, _) = machine.submit(2)
        let (c, _) = machine.submit(3, .cleanGhosts)
        _ = machine.handle(.runLoopReady)
        #expect(machine.handle(.stop) == [.interrupt(a.id), .wakeRunLoop])
        #expect(machine.state == .stopRequested && machine.isStopping && !machine.isStopped)
        #expect(machine.refusal == .stopRequested)
        #expect(machine.queue.isEmpty && machine.endingUnrun == [b, c])
        #expect(machine.mustStop(1) && machine.mustStop(99))
        #expect(machine.handle(.runLoopReady) == [], "the running job reports stopped first")
        #expect(machine.handle(.stop) == [.interrupt(a.id)], "a stop again interrupts it again")
        let stopped = syncState(1, .stopped)
        // Its end wakes the run loop for the jobs the stop left to end.
        #expect(
            machine.handle(.jobEnded(a.id, final: stopped)) == [
                .resumeSyncWaiters(syncId: 1, stopped), .wakeRunLoop,
            ])
        #expect(machine.isStopping)
        #expect(machine.handle(.runLoopReady) == [.endUnrun(b)])
        #expect(machine.isActive(2), "a sync being marked stopped is still waited for")
        #expect(
            machine.handle(.jobEnded(b.id, final: nil)) == [.resumeSyncWaiters(syncId: 2, nil), .wakeRunLoop])
        #expect(machine.handle(.runLoopReady) == [.endUnrun(c)])
        #expect(
            machine.handle(.jobEnded(c.id, final: nil)) == [
                .resumeSyncWaiters(syncId: 3, nil), .resumeStopWaiters,
            ])
        #expect(machine.state == .stopped && machine.isStopped && machine.isIdle)
        #expect(machine.refusal == .stopped)
    }

    @Test("a stop with nothing to end is stopped at once; stopping again changes nothing")
    func stopIdle() {
        var machine = runningMachine()
        #expect(machine.handle(.stop) == [.resumeStopWaiters])
        #expect(machine.isStopped)
        let before = machine
        #expect(machine.handle(.stop) == [])
        #expect(machine == before)
    }

    @Test("a job submitted once a stop arrived is never queued: it ends at once")
    func submittedAfterStop() {
        var machine = runningMachine()
        let (running, _) = machine.submit(1)
        _ = machine.handle(.runLoopReady)
        _ = machine.handle(.stop)
        let (late, actions) = machine.submit(2)
        #expect(actions == [.endUnqueued(late)])
        #expect(!machine.isActive(2))
        _ = machine.handle(.jobEnded(running.id, final: nil))
        #expect(machine.isStopped)
        let (later, afterStop) = machine.submit(3)
        #expect(afterStop == [.endUnqueued(later)])
        #expect(machine.isStopped && machine.isIdle)
    }

    @Test("restart resumes from stopped, waits while a stop is under way, and is a no-op when accepting")
    func restart() {
        var machine = runningMachine()
        #expect(machine.handle(.restart) == [])
        #expect(machine.state == .acceptingSyncs)
        let (job, _) = machine.submit(1)
        _ = machine.handle(.runLoopReady)
        _ = machine.handle(.stop)
        let stopping = machine
        #expect(machine.handle(.restart) == [.waitForStop])
        #expect(machine == stopping, "a restart while stopping changes nothing")
        _ = machine.handle(.jobEnded(job.id, final: nil))
        #expect(machine.handle(.restart) == [])
        #expect(machine.state == .acceptingSyncs && machine.refusal == nil)
        #expect(!machine.mustStop(1))
    }

    @Test("a cancel stops only its sync: the running one is interrupted, a queued one stops at its start")
    func cancel() {
        var machine = runningMachine()
        let (a, _) = machine.submit(1)
        _ = machine.submit(2)
        _ = machine.handle(.runLoopReady)
        #expect(machine.handle(.cancel(syncId: 3)) == [], "nothing queued or running for it")
        #expect(!machine.mustStop(3))
        #expect(machine.handle(.cancel(syncId: 2)) == [])
        #expect(machine.mustStop(2) && !machine.mustStop(1))
        #expect(machine.handle(.cancel(syncId: 1)) == [.interrupt(a.id)])
        #expect(machine.mustStop(1) && machine.state == .acceptingSyncs)
        _ = machine.handle(.jobEnded(a.id, final: nil))
        #expect(!machine.mustStop(1), "the cancel ends with its job")
        #expect(machine.handle(.listenerCancelled(syncId: 4)) == [])
        #expect(machine.mustStop(4))
        _ = machine.handle(.submitting(syncId: 4))
        #expect(!machine.mustStop(4), "a new run of it takes over")
    }

    @Test("an end that could not be written is kept and written again, the pause doubling up to 2 s")
    func persistFailure() {
        var machine = runningMachine()
        let one = StatusChange.stopped(syncState(1))
        let two = StatusChange.failed(syncState(2), error: "HTTP 500")
        #expect(machine.handle(.changeFailed(one)) == [.retryLater(.milliseconds(50))])
        #expect(machine.handle(.changeFailed(two)) == [], "a retry is under way")
        #expect(machine.kept == [1: one, 2: two])
        #expect(machine.handle(.retryDue) == [.writeAgain([one, two])])
        #expect(machine.handle(.changeWritten(one)) == [])
        #expect(machine.handle(.rewriteFailed(two, accessLost: false)) == [])
        #expect(machine.kept == [2: two])
        var pauses: [Duration] = []
        for _ in 0..<7 {
            guard case .retryLater(let pause) = machine.handle(.retryRoundEnded).first else {
                Issue.record("no retry while a change is kept")
                return
            }
            pauses.append(pause)
            #expect(machine.handle(.retryDue) == [.writeAgain([two])])
            _ = machine.handle(.rewriteFailed(two, accessLost: false))
        }
        #expect(pauses.map { $0 / .milliseconds(1) } == [100, 200, 400, 800, 1600, 2000, 2000])
        _ = machine.handle(.changeWritten(two))
        #expect(machine.handle(.retryRoundEnded) == [])
        #expect(machine.kept.isEmpty && machine.retryPause == nil)
        #expect(
            machine.handle(.changeFailed(one)) == [.retryLater(.milliseconds(50))],
            "a new failure starts over")
    }

    @Test(
        "a kept change gives way to a newer one, a new run, a new access or a lost lease; running is never kept"
    )
    func keptChangesGiveWay() {
        var machine = runningMachine()
        let start = StatusChange.start(syncState(1, .new))
        #expect(start.isStart)
        #expect(machine.handle(.changeFailed(start)) == [])
        #expect(machine.kept.isEmpty && machine.retryPause == nil, "its submit fails instead")

        let old = StatusChange.stopped(syncState(1))
        let newer = StatusChange.done(syncState(1))
        _ = machine.handle(.changeFailed(old))
        _ = machine.handle(.changeFailed(newer))
        #expect(machine.kept == [1: newer])
        _ = machine.handle(.changeWritten(old))
        #expect(machine.kept == [1: newer], "an older write landing does not drop the newer change")
        _ = machine.handle(.submitting(syncId: 1))
        #expect(machine.kept.isEmpty, "a new run of the sync takes over")

        let setAside = StatusChange.setAside(
            SetAsideSync(id: 2, name: "s2", error: SyncError(.unreadableSync, "sync 's2' (#2) ...")))
        _ = machine.handle(.changeFailed(setAside))
        #expect(machine.handle(.flushAsked) == [.writeAgain([setAside])])
        _ = machine.handle(.rewriteFailed(setAside, accessLost: true))
        #expect(machine.kept.isEmpty, "no longer this manager's to write")
        _ = machine.handle(.changeFailed(newer))
        _ = machine.handle(.accessChanged)
        #expect(machine.kept.isEmpty)
        #expect(machine.handle(.retryDue) == [])
        #expect(machine.handle(.retryRoundEnded) == [])
        #expect(machine.retryPause == nil)
    }
}
