import BatonSync

/// A participant's rules as one pure state machine: events in (lifecycle, lease, syncs, storage,
/// timers, local edits, results of its own actions), actions out (publish, take or release the
/// lease, start or stop syncs, timers, records). `Participant` carries the actions out and feeds
/// their results back as events; tests drive it with no I/O, no clock and no real lease.
///
/// It owns everything a reader of the participant must check: the phase with the lease held, the
/// lifecycle asked for, each configured sync's retries, the recoveries after storage failures,
/// the stop before a release (its save grace and deadline, the flush and the checkpoint it
/// calls for), the problem published, the local edits in flight. Nothing here is kept twice:
/// the published retries, the pending timers and the epoch are read off that state. What the
/// participant reads (a store file's problem, a higher-priority participant waiting, the lock
/// file's state) arrives as facts; what they call for is decided here.
///
/// `Lease` is what the lease gives a holder (`WriterLease.Held` in `Participant`; any small
/// value in tests). Time enters as values in events (`at`, `waitMillis`, `began`) and as timers
/// this machine schedules, never from a clock.
///
/// ```swift
/// var machine = ParticipantMachine<WriterLease.Held>(configuration)
/// for action in machine.handle(.lifecycle(.foreground)) { ... }  // publish, startAcquiring
/// ```
package struct ParticipantMachine<Lease: Sendable & Hashable>: Sendable, Hashable {
    /// Where the participant is with respect to the writer lease. The lease held is the
    /// associated value, so a phase and the lease can never disagree.
    package enum Phase: Sendable, Hashable {
        /// Not writing and not asking to.
        case background
        /// Foreground, waiting for the lease: a wait is under way, or (after a failed take) the
        /// lease recovery's timer runs.
        case waiting
        /// Holding the lease; its syncs run.
        case writer(Lease)
        /// Stopping its syncs to hand the lease over.
        case releasing(Release)
        /// The lease was taken over (or its holding can never commit): it stops its syncs
        /// without writing, then lets the lease go without recording a release.
        case fenced(Release)
        /// Shut down for good.
        case finished

        /// The published name (`background`, `waiting`, `writer`, `releasing`, `fenced`,
        /// `finished`).
        package var name: ParticipantPhase {
            switch self {
            case .background: .background
            case .waiting: .waitingForLease
            case .writer: .writer
            case .releasing: .releasing
            case .fenced: .fenced
            case .finished: .finished
            }
        }

        /// The lease held in this phase: exactly in `writer`, `releasing` and `fenced`.
        package var lease: Lease? {
            switch self {
            case .writer(let lease): lease
            case .releasing(let release), .fenced(let release): release.lease
            case .background, .waiting, .finished: nil
            }
        }
    }

    /// A hand-over under way.
    package struct Release: Sendable, Hashable {
        /// The lease being handed over.
        package let lease: Lease
        /// Why (recorded with the release, even when the holding is fenced meanwhile).
        package let reason: ReleaseReason
        /// How far the syncs' stop has come.
        package internal(set) var stop: Stop = .requested

        init(lease: Lease, reason: ReleaseReason) {
            self.lease = lease
            self.reason = reason
        }

        /// When the syncs' stop began (monotonic ms, for the release's duration), once known.
        package var stopBegan: Double? {
            switch stop {
            case .requested: nil
            case .waiting(let wait): wait.began
            case .ending(let began), .stopped(let began): began
            }
        }
    }

    /// A release's stop of the syncs, step by step: `stopManager`, then the wait for the manager
    /// (the save grace and the deadline run as timers), then its end (`flushUnpersisted` when
    /// within the deadline, a checkpoint, the write access dropped), then the release.
    package enum Stop: Sendable, Hashable {
        /// `stopManager` is under way.
        case requested
        /// The manager stops; the participant waits for it.
        case waiting(StopWait)
        /// The manager stopped (its stop began at the value, monotonic ms): the stop's last
        /// steps are under way.
        case ending(began: Double)
        /// The syncs stopped (since the value): the lease goes once no local edit runs.
        case stopped(began: Double)
    }

    /// The wait for the manager's stop.
    package struct StopWait: Sendable, Hashable {
        /// When the stop began (monotonic ms).
        package let began: Double
        /// The save grace's timer, until it fires (nil: none, or fired).
        package internal(set) var grace: TimerID?
        /// The deadline's timer, until it fires.
        package internal(set) var deadline: TimerID?
        /// The deadline passed before the manager stopped (the store was interrupted).
        package internal(set) var deadlinePassed = false
    }

    /// Each configured sync's failures in a row, and its retry while one is published.
    struct SyncRetries: Sendable, Hashable {
        /// Failures in a row that were retried (until it is `done`; kept across releases).
        var failures = 0
        /// The retry the status shows, from its scheduling until `done` or a release.
        var pending: PendingRetry?
    }

    struct PendingRetry: Sendable, Hashable {
        var lastError: String
        /// When the next attempt starts (ms since 1970).
        var nextAttempt: Int64
        /// Nil once it fired (the sync is in its attempt).
        var timer: TimerID?
    }

    struct RecoveryState: Sendable, Hashable {
        /// Recoveries scheduled in a row (until the step succeeds).
        var failures = 0
        var timer: TimerID?
    }

    /// The names of the configured syncs (events about others are ignored).
    package let configuredSyncs: Set<String>
    /// A failed configured sync runs again after this, doubling per failure in a row; nil:
    /// never retried. Recoveries start from it too (500 ms when nil).
    package let retryDelay: Duration?
    /// The longest pause of a retry or a recovery.
    package let maxRetryDelay: Duration
    /// How long a stop waits for the manager before it interrupts the store; also how long a
    /// local edit waits for a writer still starting.
    package let stopDeadline: Duration
    /// How long a stop lets a page being saved run on before it ends the save early (nil:
    /// never; at most the deadline).
    package let saveGrace: Duration?

    /// Where the participant is, with the lease it holds.
    package internal(set) var phase: Phase = .background
    /// What the lifecycle signal last said.
    package internal(set) var desired: Lifecycle = .background
    /// A shutdown was asked for: nothing new starts; it finishes once the lease is let go.
    package internal(set) var shuttingDown = false
    /// What keeps the participant from its work now.
    package internal(set) var problem: Problem?
    /// The sync manager's state, as last fed.
    package internal(set) var managerState: ManagerStateMachine.State?
    /// Local edits running under the lease (a release waits for them).
    package internal(set) var localEdits = 0
    /// The writer has started (its soups registered, its syncs running): local edits are
    /// admitted. True only in `writer`, from `writerStarted` until the release begins.
    package internal(set) var admitsEdits = false
    var retries: [String: SyncRetries] = [:]
    var recoveries: [Recovery: RecoveryState] = [:]
    /// What the lifecycle file holds that was refused, and since when: kept (and published)
    /// until the file holds a valid signal again or is removed. The same refusal read again
    /// keeps its time and is said once.
    package internal(set) var refusedSignal: RefusedSignal?
    var lastTimerSerial = 0

    /// Makes a machine in the background, for the configured syncs of these names, these retry
    /// delays and this stop's deadline and save grace.
    package init(
        configuredSyncs: some Sequence<String>, retryDelay: Duration?, maxRetryDelay: Duration,
        stopDeadline: Duration = .seconds(5), saveGrace: Duration? = nil
    ) {
        self.configuredSyncs = Set(configuredSyncs)
        self.retryDelay = retryDelay
        self.maxRetryDelay = maxRetryDelay
        self.stopDeadline = stopDeadline
        self.saveGrace = saveGrace
    }

    /// The machine for a participant set up with `configuration`.
    package init(_ configuration: ParticipantConfiguration) {
        self.init(
            configuredSyncs: configuration.syncs.map(\.name), retryDelay: configuration.retryDelay,
            maxRetryDelay: configuration.maxRetryDelay, stopDeadline: configuration.stopDeadline,
            saveGrace: configuration.saveGrace)
    }

    /// Takes `event` in and returns what to do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        Self.publishingOnce(take(event))
    }

    /// Drops a `publish` that another one follows with only records and timers between: both
    /// would write the same state.
    static func publishingOnce(_ actions: [Action]) -> [Action] {
        var result: [Action] = []
        for action in actions {
            if action == .publish, let earlier = result.lastIndex(of: .publish),
                result[earlier...].allSatisfy(\.leavesStatusAsIs)
            {
                result.remove(at: earlier)
            }
            result.append(action)
        }
        return result
    }

    mutating func take(_ event: Event) -> [Action] {
        if case .finished = phase {
            // Only a lease still arriving needs anything: it goes back untouched.
            if case .leaseGranted(let lease, _) = event { return [.releaseUnused(lease)] }
            return []
        }
        switch event {
        case .lifecycle(let lifecycle): return self.lifecycle(lifecycle)
        case .lifecycleIgnored(let reason, let at): return lifecycleRefused(reason, at: at)
        case .lifecycleMissing: return clearRefusedSignal()
        case .leaseGranted(let lease, let waitMillis): return leaseGranted(lease, waitMillis: waitMillis)
        case .leaseFailed(let reason): return leaseFailed(reason)
        case .leaseLost(let takenOver, let successor):
            return leaseLost(takenOver: takenOver, successor: successor)
        case .leaseBlocked(let blocked): return leaseBlocked(blocked)
        case .higherPriorityWaiting:
            guard case .writer(let lease) = phase, !shuttingDown else { return [] }
            return beginRelease(lease, .yield)
        case .writerStarted, .writerStartFailed, .writerStartStale: return writerStart(event)
        case .storeUnguarded(let tables): return storeUnguarded(tables)
        case .syncFinished(let name): return syncFinished(name)
        case .syncFailed(let name, let error, let storeProblem, let at):
            guard configuredSyncs.contains(name) else { return [] }
            if let storeProblem { return storeLost(storeProblem) }
            return scheduleRetry(name, error: error, at: at)
        case .lockFileChanged: return lockFileChanged()
        case .storeChecked(let problem): return storeChecked(problem)
        case .directoryRead(let problem): return directoryRead(storeProblem: problem)
        case .storeLost(let reason): return storeLost(reason)
        case .storeBack: return storeBack(.storeBack)
        case .storeReopened(let what): return storeBack(.storeReopened(what))
        case .storeReopenFailed(let reason): return storeReopenFailed(reason)
        case .managerState(let state): return noteManagerState(state)
        case .syncStateChanged:
            // While the manager stops, it may be inside a write that only the deadline's
            // interrupt ends: nothing waits for it then (the stop's end reads its state).
            return waitsForManagerStop ? [] : [.readManagerState]
        case .timerFired(let id): return timerFired(id)
        case .localEditEnded:
            guard localEdits > 0 else { return [] }
            localEdits -= 1
            return releaseIfDue()
        case .managerStopping(let state, let began): return managerStopping(state, began: began)
        case .managerStopped: return managerStopped()
        case .syncsStopped: return syncsStopped()
        case .released: return released()
        case .published: return resetRecovery(.publish)
        case .publishFailed(let error): return publishFailed(error)
        case .publishRequested: return [.publish]
        case .shutdown: return shutdown()
        }
    }

    /// The sync manager's state, recorded and published when it changed.
    mutating func noteManagerState(_ state: ManagerStateMachine.State) -> [Action] {
        guard state != managerState else { return [] }
        managerState = state
        return [.record(.manager(state)), .publish]
    }

    /// A local edit asks to commit: the lease to fence it with, counted until `localEditEnded`
    /// (a release waits for it), or nil when this participant is not the writer, or is but has
    /// not started yet (its soups may not be registered). A question
    /// answered at once rather than an event: the edit cannot wait for the event loop.
    package mutating func beginLocalEdit() -> Lease? {
        guard case .writer(let lease) = phase, admitsEdits else { return nil }
        localEdits += 1
        return lease
    }
}
