import BatonStore

// The interpreter of ``ManagerStateMachine``: run()'s two loops, and the carrying out of what the
// machine answers. Nothing here decides; it acts and feeds the results back.
extension SyncManager {
    /// What a job the machine holds carries that is no value.
    struct JobHandles: Sendable {
        /// The listener of a run.
        var onUpdate: SyncUpdateBlock?
        /// The caller of a clean resync ghosts, resumed once with its result.
        var ghosts: CheckedContinuation<Int, any Error>?
        /// The clean resync ghosts was asked to look only at the server's deletions
        /// (``GhostCleaning``).
        var incremental = false
        /// The job's task while it runs (a stop or a cancel cancels it).
        var task: Task<SyncState?, Never>?
    }

    /// Calls waiting for a sync's jobs to end, or for the manager to stop.
    struct Waiters {
        var syncs: [Int64: [CheckedContinuation<SyncState?, Never>]] = [:]
        var stop: [CheckedContinuation<Void, Never>] = []
    }

    /// What wakes ``run()``'s loops: the run loop when there is a job to run or to end, the
    /// retry loop with the pause before it writes the kept status changes again. Each holds at
    /// most one wakeup; both end with `run()`.
    struct Wakeups: Sendable {
        let jobs: AsyncStream<Void>
        private let jobBell: AsyncStream<Void>.Continuation
        let retries: AsyncStream<Duration>
        private let retryBell: AsyncStream<Duration>.Continuation

        init() {
            (jobs, jobBell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            (retries, retryBell) = AsyncStream.makeStream(
                of: Duration.self, bufferingPolicy: .bufferingNewest(1))
        }

        func wakeRunLoop() { jobBell.yield() }
        func retry(after pause: Duration) { retryBell.yield(pause) }

        func finish() {
            jobBell.finish()
            retryBell.finish()
        }
    }

    /// The run loop: whenever woken, starts the jobs the machine gives it, each in a child task
    /// (up to the machine's concurrency run at once), and ends the jobs a stop reached, one at a
    /// time; until `run()` is cancelled, which cancels the running jobs and waits for them.
    func runJobs() async {
        await withDiscardingTaskGroup { group in
            await takeJobs(&group)
            for await _ in wakeups.jobs { await takeJobs(&group) }
        }
    }

    private func takeJobs(_ group: inout DiscardingTaskGroup) async {
        while !Task.isCancelled {
            let actions = machine.handle(.runLoopReady)
            if actions.isEmpty { return }
            for action in actions {
                guard case .run(let job) = action else {
                    await carryOut([action])
                    continue
                }
                group.addTask { await self.runHeld(job) }
            }
        }
    }

    /// Runs a job the machine started and tells it of the end.
    private func runHeld(_ job: Job) async {
        let final = await execute(job)
        jobs[job.id] = nil
        await carryOut(machine.handle(.jobEnded(job.id, final: final)))
    }

    /// How many syncs run at once unless ``setConcurrency(_:)`` says otherwise. Measured by
    /// `baton bench --only syncs` (8 sync downs of 5,000 records, 100 ms a request, on two
    /// cores, nothing else running): one at a time took 4.5 s, two 2.3 s, four 1.2 s, all eight
    /// 0.8 s. Four gets most of the gain (the one writer saving pages is the bound beyond it),
    /// while each sync running holds up to two pages in memory.
    public static let defaultConcurrency = 4

    /// Sets how many syncs may run at once (at least 1; 1 is Mobile Sync's way, one at a time in
    /// submission order; the default is ``defaultConcurrency``). Their fetches overlap; their
    /// page saves go one at a time through the one writer. Syncs that share a soup, and a sync
    /// up with any other, still run one after the other, never a later one before an earlier it
    /// shares anything with (``ManagerStateMachine``).
    public func setConcurrency(_ count: Int) {
        carryOutAtOnce(machine.handle(.setConcurrency(count)))
    }

    /// The retry loop: after each pause the machine asks for, writes the kept status changes
    /// again.
    func retryKeptChanges() async {
        for await pause in wakeups.retries {
            do {
                try await Task.sleep(for: pause)
            } catch {
                return  // run() ended
            }
            await carryOut(machine.handle(.retryDue))
            await carryOut(machine.handle(.retryRoundEnded))
        }
    }

    /// Carries out what the machine answered, in order, feeding the results back.
    func carryOut(_ actions: [ManagerStateMachine.Action]) async {
        for action in actions {
            switch action {
            case .run(let job):
                let final = await execute(job)
                jobs[job.id] = nil
                await carryOut(machine.handle(.jobEnded(job.id, final: final)))
            case .endUnrun(let job):
                let final = await endWithoutRunning(job)
                jobs[job.id] = nil
                await carryOut(machine.handle(.jobEnded(job.id, final: final)))
            case .endUnqueued(let job):
                _ = await endWithoutRunning(job)
                jobs[job.id] = nil
            case .writeAgain(let changes):
                await writeAgain(changes)
            case .interrupt, .wakeRunLoop, .resumeSyncWaiters, .resumeStopWaiters, .retryLater, .refuseRun,
                .waitForStop:
                carryOutAtOnce([action])
            }
        }
    }

    /// Carries out the actions done without waiting: all that a stop, a cancel, a listener's
    /// cancel, a change of access or a written status change is answered with.
    func carryOutAtOnce(_ actions: [ManagerStateMachine.Action]) {
        for action in actions {
            switch action {
            case .interrupt(let id):
                jobs[id]?.task?.cancel()
            case .wakeRunLoop:
                wakeups.wakeRunLoop()
            case .resumeSyncWaiters(let syncId, let final):
                let resumed = waiters.syncs.removeValue(forKey: syncId) ?? []
                guard !resumed.isEmpty else { continue }
                let state = final ?? stateForWaiters(syncId)
                for waiter in resumed { waiter.resume(returning: state) }
            case .resumeStopWaiters:
                let resumed = waiters.stop
                waiters.stop.removeAll()
                for waiter in resumed { waiter.resume() }
            case .retryLater(let pause):
                wakeups.retry(after: pause)
            case .refuseRun, .waitForStop:
                break  // answers to run() and restart(), which act on them
            case .run, .endUnrun, .endUnqueued, .writeAgain:
                preconditionFailure("\(action) is carried out by awaiting it")
            }
        }
    }

    /// Runs the job in a task of its own, so that a stop or a cancel can cancel it (and its
    /// request in flight) without cancelling `run()`; awaited here, and cancelled with `run()`.
    ///
    /// - Returns: the sync's final state, for a run that read it.
    private func execute(_ job: Job) async -> SyncState? {
        let task = Task { await self.perform(job) }
        jobs[job.id, default: JobHandles()].task = task
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Writes kept status changes again, in order, up to the first that fails while this
    /// manager may still write.
    private func writeAgain(_ changes: [StatusChange]) async {
        for change in changes {
            do {
                try await write(change, through: writer())
                carryOutAtOnce(machine.handle(.changeWritten(change)))
            } catch {
                let code = (error as? StoreError)?.code
                let accessLost = code == .staleEpoch || code == .storeFileChanged
                carryOutAtOnce(machine.handle(.rewriteFailed(change, accessLost: accessLost)))
                if !accessLost { return }
            }
        }
    }
}
