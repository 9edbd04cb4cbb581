/// The sync manager's rules as a pure state machine: events in, actions out, no I/O, no tasks.
/// `SyncManager` feeds it and carries out what it returns (`SyncManager+Machine.swift`).
///
/// It owns everything a reader of the manager must check: its state (Mobile Sync's accepting,
/// stop requested, stopped), whether `run()` runs, the queue of jobs, the jobs the run loop
/// holds, the queued jobs a stop reached, the syncs asked to cancel, and the status changes
/// that could not be written yet, with their retry. Jobs are values: what one carries that is
/// not (a listener, a continuation, its task) the manager keeps beside it, by job id.
///
/// The rules:
/// - Jobs run only while accepting and inside `run()`, up to ``concurrency`` at once (1 by
///   default: one at a time, in submission order).
/// - Two jobs that conflict never run at once, and the later never starts before the earlier:
///   jobs of the same sync, jobs that share a soup (a sync down and the ghost cleaning of its
///   soup, a parent-children pair of the same soups), and a sync up with any job (a sync up runs
///   alone, after every job submitted before it and before every job submitted after it: what
///   it sends may depend on an earlier sync, as a contact on the account it names).
/// - A stop interrupts the running jobs and takes the queue: once they all ended, the run loop
///   ends each queued job without running it (its sync `stopped`), in order. The manager is
///   stopped when none is left; a stop with nothing to end is stopped at once.
/// - A job submitted once a stop arrived is never queued: it ends at once, unrun.
/// - A restart accepts again when stopped, waits for the stop to complete when one is under
///   way, and changes nothing when accepting.
/// - A sync's waiters resume once nothing is queued, running or ending for it.
/// - A run's `running` that could not be written is not kept (its submit fails). Any other
///   status change that could not be written is kept (the latest per sync) and written again
///   after a pause that doubles from 50 ms to 2 s, until it lands, the sync is submitted again,
///   the write access changes, or a write says it is no longer this manager's to make.
///
/// ```swift
/// var machine = ManagerStateMachine()
/// let job = machine.makeJob(syncId: 7, name: "accounts", kind: .run)
/// machine.handle(.submitted(job))   // [.wakeRunLoop]
/// machine.handle(.runLoopReady)     // [.run(job)]
/// machine.handle(.stop)             // [.interrupt(job.id)]
/// ```
public struct ManagerStateMachine: Sendable, Hashable {
    /// Mobile Sync's manager states.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case acceptingSyncs = "accepting_syncs"
        case stopRequested = "stop_requested"
        case stopped
    }

    /// A job's id, unique in one manager.
    package typealias JobID = Int

    /// A unit of the run loop's work: a run of a sync, or a clean resync ghosts of it.
    package struct Job: Sendable, Hashable, CustomStringConvertible {
        package enum Kind: Sendable, Hashable {
            /// Run a sync down or up (a sync down resumes where its position says).
            case run
            case cleanGhosts
        }

        package let id: JobID
        package let syncId: Int64
        /// The sync's name when it was queued: it names the sync in a failure if its row cannot
        /// be read when the job runs.
        package let name: String?
        package let kind: Kind
        /// The soups the job writes (its sync's, and a parent-children target's children's).
        package let soups: Set<String>
        /// A sync up's run: it runs alone (see the rules).
        package let alone: Bool

        package var description: String { "job \(id) (\(kind) of sync \(syncId))" }

        /// Whether the two may not run at once (nor the later start before the earlier).
        package func conflicts(with other: Job) -> Bool {
            alone || other.alone || syncId == other.syncId || !soups.isDisjoint(with: other.soups)
        }
    }

    package enum Event: Sendable, Hashable {
        /// `run()` began.
        case runStarted
        /// `run()` returned (cancelled).
        case runEnded
        /// A run of the sync is being submitted (before its `running` is written): a status change
        /// still kept for it and a cancel asked of it are dropped; the new run takes over.
        case submitting(syncId: Int64)
        /// A job is submitted (for a run, once its `running` committed).
        case submitted(Job)
        /// The run loop is free: what does it do next?
        case runLoopReady
        /// The job the run loop held ended (ran, or ended unrun); `final` is its sync's final
        /// state when it gave one.
        case jobEnded(JobID, final: SyncState?)
        /// `stop()`.
        case stop
        /// `restart(...)`.
        case restart
        /// `cancelSync(id:)`.
        case cancel(syncId: Int64)
        /// A listener answered `.cancel`: the sync stops at its next check.
        case listenerCancelled(syncId: Int64)
        /// A status change was written (first time or again).
        case changeWritten(StatusChange)
        /// A status change's first write failed.
        case changeFailed(StatusChange)
        /// A kept change's write failed again; `accessLost`: the lease moved on or the store file
        /// was replaced, so it is no longer this manager's to write.
        case rewriteFailed(StatusChange, accessLost: Bool)
        /// The retry's pause is over.
        case retryDue
        /// The retry's writes are done.
        case retryRoundEnded
        /// `flushUnpersisted()`: write the kept changes once more, now.
        case flushAsked
        /// The write access changed: kept changes are left to the next holder's recovery.
        case accessChanged
        /// How many jobs may run at once.
        case setConcurrency(Int)
    }

    package enum Action: Sendable, Hashable {
        /// Run the job (it is the run loop's now) and feed `jobEnded` when it ends.
        case run(Job)
        /// End a queued job a stop reached without running it (its sync `stopped`, a clean
        /// resync ghosts failed), then feed `jobEnded`.
        case endUnrun(Job)
        /// End a job submitted after a stop arrived as `endUnrun` does; it was never queued, so
        /// nothing is fed back.
        case endUnqueued(Job)
        /// Stop the job at its next check and cancel its request in flight.
        case interrupt(JobID)
        /// There is work for the run loop.
        case wakeRunLoop
        /// Nothing is queued, running or ending for the sync: resume its waiters, with this state
        /// when the job gave one (else its stored one).
        case resumeSyncWaiters(syncId: Int64, SyncState?)
        /// The manager is stopped: resume what waits for that.
        case resumeStopWaiters
        /// Feed `retryDue` after this pause.
        case retryLater(Duration)
        /// Write these kept changes again, in order, up to the first that fails (the store is
        /// likely still failing); feed each result.
        case writeAgain([StatusChange])
        /// `run()` is already running: refuse the second.
        case refuseRun
        /// Wait until stopped, then feed `restart` again.
        case waitForStop
    }

    /// The first pause before a kept change is written again, and the longest.
    package static let firstRetryPause = Duration.milliseconds(50)
    package static let longestRetryPause = Duration.seconds(2)

    public private(set) var state: State
    /// How many jobs may run at once (at least 1).
    public private(set) var concurrency: Int
    /// `run()` runs.
    package private(set) var isRunLoopRunning = false
    /// Jobs submitted and not started, in order (empty unless accepting).
    package private(set) var queue: [Job] = []
    /// The jobs the run loop holds, in the order they started: running, or one ending unrun.
    package private(set) var held: [Job] = []
    /// The job the run loop holds when it holds one (the first, when several run).
    package var current: Job? { held.first }
    /// Queued jobs a stop reached: each ends without running, in order, after the held jobs
    /// (empty while accepting).
    package private(set) var endingUnrun: [Job] = []
    /// Syncs asked to stop at their next check.
    package private(set) var cancelRequested: Set<Int64> = []
    /// Status changes not written yet, by sync id: the latest of each.
    package private(set) var kept: [Int64: StatusChange] = [:]
    /// The pause before the next retry of the kept changes; nil when no retry is under way.
    package private(set) var retryPause: Duration?
    private var lastJobId: JobID = 0

    public init(state: State = .acceptingSyncs, concurrency: Int = 1) {
        self.state = state
        self.concurrency = max(1, concurrency)
    }

    /// `isStopping()`: a stop was requested and jobs are still ending.
    public var isStopping: Bool { state == .stopRequested }
    /// `isStopped()`: a stop was requested and every job has ended.
    public var isStopped: Bool { state == .stopped }

    /// A new job for the sync: fed with `submitted` once its `running` committed. Its id is
    /// minted here so that what the manager keeps beside it can be filed first.
    package mutating func makeJob(
        syncId: Int64, name: String?, kind: Job.Kind, soups: Set<String> = [], alone: Bool = false
    ) -> Job {
        lastJobId += 1
        return Job(id: lastJobId, syncId: syncId, name: name, kind: kind, soups: soups, alone: alone)
    }

    /// Why a submission is refused now (the state), or nil when it is accepted.
    package var refusal: State? { state == .acceptingSyncs ? nil : state }

    /// Whether a job of the sync is queued, running or ending.
    package func isActive(_ syncId: Int64) -> Bool {
        jobs.contains { $0.syncId == syncId }
    }

    /// Whether a run of the sync (not a clean resync ghosts of it) is queued, running or ending:
    /// a reSync may queue behind the sync's ghost cleaning, never beside another run.
    package func isRunActive(_ syncId: Int64) -> Bool {
        jobs.contains { $0.syncId == syncId && $0.kind == .run }
    }

    /// No job is queued, running or ending.
    package var isIdle: Bool { held.isEmpty && queue.isEmpty && endingUnrun.isEmpty }

    /// Whether the sync must stop at its next check: a stop, or a cancel of it.
    package func mustStop(_ syncId: Int64) -> Bool {
        state != .acceptingSyncs || cancelRequested.contains(syncId)
    }

    /// Every job the manager holds: running or ending, queued, reached by a stop.
    package var jobs: [Job] { held + queue + endingUnrun }

    /// Takes `event` in and returns what to do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .runStarted:
            guard !isRunLoopRunning else { return [.refuseRun] }
            isRunLoopRunning = true
            return []
        case .runEnded:
            isRunLoopRunning = false
            return []
        case .submitting(let syncId):
            kept[syncId] = nil
            cancelRequested.remove(syncId)
            return []
        case .submitted(let job): return submitted(job)
        case .runLoopReady: return runLoopReady()
        case .jobEnded(let id, let final): return jobEnded(id, final: final)
        case .stop: return stop()
        case .restart: return restart()
        case .cancel(let syncId):
            guard isActive(syncId) else { return [] }
            cancelRequested.insert(syncId)
            return held.filter { $0.syncId == syncId }.map { .interrupt($0.id) }
        case .listenerCancelled(let syncId):
            cancelRequested.insert(syncId)
            return []
        case .changeWritten(let change), .rewriteFailed(let change, accessLost: true):
            // A change submitted meanwhile took over: it stays.
            if kept[change.syncId] == change { kept[change.syncId] = nil }
            return []
        case .changeFailed(let change):
            // A `running` that did not commit is not kept: its submit fails and says so.
            return change.isStart ? [] : keep(change)
        case .rewriteFailed(_, accessLost: false): return []
        case .retryDue: return kept.isEmpty ? [] : [.writeAgain(keptInOrder)]
        case .retryRoundEnded: return retryRoundEnded()
        case .flushAsked: return kept.isEmpty ? [] : [.writeAgain(keptInOrder)]
        case .accessChanged:
            kept = [:]
            return []
        case .setConcurrency(let count): return setConcurrency(count)
        }
    }

    /// The kept changes, by sync id.
    package var keptInOrder: [StatusChange] {
        kept.sorted { $0.key < $1.key }.map(\.value)
    }

    private mutating func submitted(_ job: Job) -> [Action] {
        guard state == .acceptingSyncs else { return [.endUnqueued(job)] }
        queue.append(job)
        return [.wakeRunLoop]
    }

    /// The jobs to start now: a stop's queued jobs one at a time once nothing runs; else every
    /// queued job, in order, that conflicts with no running job nor an earlier queued one, up to
    /// ``concurrency`` running.
    private mutating func runLoopReady() -> [Action] {
        guard isRunLoopRunning else { return [] }
        if !endingUnrun.isEmpty {
            guard held.isEmpty else { return [] }
            let job = endingUnrun.removeFirst()
            held = [job]
            return [.endUnrun(job)]
        }
        guard state == .acceptingSyncs else { return [] }
        var started: [Action] = []
        var waiting: [Job] = []
        for job in queue {
            if held.count < concurrency, !held.contains(where: job.conflicts),
                !waiting.contains(where: job.conflicts)
            {
                held.append(job)
                started.append(.run(job))
            } else {
                waiting.append(job)
            }
        }
        queue = waiting
        return started
    }

    private mutating func jobEnded(_ id: JobID, final: SyncState?) -> [Action] {
        guard let index = held.firstIndex(where: { $0.id == id }) else { return [] }
        let job = held.remove(at: index)
        cancelRequested.remove(job.syncId)
        var actions: [Action] = []
        if !isActive(job.syncId) { actions.append(.resumeSyncWaiters(syncId: job.syncId, final)) }
        // The run loop starts what this job held back, or the next a stop left to end.
        if !queue.isEmpty || !endingUnrun.isEmpty { actions.append(.wakeRunLoop) }
        return actions + completeStop()
    }

    /// Sets how many jobs may run at once (at least 1); more may start now.
    private mutating func setConcurrency(_ count: Int) -> [Action] {
        concurrency = max(1, count)
        return queue.isEmpty ? [] : [.wakeRunLoop]
    }

    /// A requested stop completes once no job is left.
    private mutating func completeStop() -> [Action] {
        guard state == .stopRequested, isIdle else { return [] }
        state = .stopped
        return [.resumeStopWaiters]
    }

    private mutating func stop() -> [Action] {
        switch state {
        case .acceptingSyncs:
            guard !isIdle else {
                state = .stopped
                return [.resumeStopWaiters]
            }
            state = .stopRequested
            endingUnrun = queue
            queue = []
            var actions: [Action] = held.map { .interrupt($0.id) }
            if !endingUnrun.isEmpty { actions.append(.wakeRunLoop) }
            return actions
        case .stopRequested:
            return held.map { .interrupt($0.id) }
        case .stopped:
            return []
        }
    }

    private mutating func restart() -> [Action] {
        switch state {
        case .stopped:
            state = .acceptingSyncs
            return []
        case .stopRequested:
            return [.waitForStop]
        case .acceptingSyncs:
            return []
        }
    }

    /// A first write failed: the change is kept, and a retry starts unless one is under way.
    private mutating func keep(_ change: StatusChange) -> [Action] {
        kept[change.syncId] = change
        guard retryPause == nil else { return [] }
        retryPause = Self.firstRetryPause
        return [.retryLater(Self.firstRetryPause)]
    }

    private mutating func retryRoundEnded() -> [Action] {
        guard let pause = retryPause else { return [] }
        guard !kept.isEmpty else {
            retryPause = nil
            return []
        }
        let next = min(pause * 2, Self.longestRetryPause)
        retryPause = next
        return [.retryLater(next)]
    }
}
