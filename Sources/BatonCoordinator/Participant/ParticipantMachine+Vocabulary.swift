import BatonSync

extension ParticipantMachine {
    /// What the participant logs (and broadcasts, where a ``ParticipantEvent`` says the same).
    package enum Note: Sendable, Hashable {
        /// The lifecycle signal changed: `ParticipantEvent.lifecycle`.
        case lifecycle(Lifecycle)
        /// The lifecycle file cannot be read as a signal, for this reason (said once per
        /// reason, until a valid signal is read).
        case lifecycleIgnored(String)
        /// The lease is this participant's: `leaseTookOver` (when it was a takeover) and
        /// `leaseAcquired(epoch:waitMillis:)`.
        case leaseAcquired(Lease, waitMillis: Double)
        /// Taking the lease failed (`lease.failed`).
        case leaseFailed(String)
        /// The held lease was taken over or its lock file went away: `leaseLost`.
        case leaseLost(Lease, takenOver: Bool, successor: String?)
        /// A takeover is held up (or, nil, no longer): `leaseBlocked`.
        case leaseBlocked(WriterLease.Blocked?)
        /// The store file changed under this process (`store.lost`).
        case storeLost(String)
        /// The store file this process opened is in place again (`store.back`).
        case storeBack
        /// The store's files were reopened: what the paths hold now is used in place of what
        /// changed (`store.reopened`, with what changed).
        case storeReopened(String)
        /// A failed configured sync runs again after `delay`: `syncRetry`.
        case syncRetry(name: String, attempt: Int, delay: Duration)
        /// The published problem changed: `problem`.
        case problem(String?)
        /// The sync manager's state changed: `manager`.
        case manager(ManagerStateMachine.State)
        /// Publishing the status failed, the first time in a row (`status.failed`).
        case statusFailed(String)
    }

    /// What the participant must do. Those marked "→" end with the event(s) named, which the
    /// participant feeds back before it carries out the next action.
    package enum Action: Sendable, Hashable {
        /// Write the status file from this machine's state. The write may end after the
        /// actions that follow (the participant writes off its loop, newest state first); it
        /// is on disk before `startAcquiring` and `exit` are carried out. Later `published` or
        /// `publishFailed`.
        case publish
        /// Log and broadcast.
        case record(Note)
        /// Start waiting for the lease. → later `leaseGranted`, `leaseFailed`, `leaseBlocked`.
        case startAcquiring
        /// Stop waiting for the lease. A holding the wait already took (its grant not yet fed
        /// here, so never this machine's) is released unused.
        case cancelAcquiring
        /// Fence writes with `lease`, recover interrupted syncs, restart stopped ones, run the
        /// configured syncs. → `writerStarted`, `writerStartFailed` or `writerStartStale`.
        case becomeWriter(Lease)
        /// Let the local edits waiting for the writer to start go ahead.
        case resumeEditWaiters
        /// Run a failed configured sync again. → `syncFailed` when it cannot even start.
        case runSync(String)
        /// `stop()`, wait for `isStopped()` (interrupting past the deadline), ask for a checkpoint
        /// after the release, stop fencing the manager's writes with the lease. → `syncsStopped`.
        case stopSyncs(ReleaseReason)
        /// Let the lease go (local edits have ended) and record it with its duration since
        /// `stopBegan`; `recordRelease` is false when fenced (the taker closes the interval).
        /// → `released`.
        case releaseLease(Lease, reason: ReleaseReason, recordRelease: Bool, stopBegan: Double)
        /// The lease arrived when it was not wanted: let it go untouched.
        case releaseUnused(Lease)
        /// Feed `timerFired(id)` after `delay`, unless cancelled first.
        case scheduleTimer(TimerID, after: Duration)
        /// The timer is no longer wanted (a late firing is ignored anyway).
        case cancelTimer(TimerID)
        /// Check the store's files and, when the paths hold a store other than the one opened,
        /// reopen it. → `storeBack`, `storeReopened` or `storeReopenFailed`.
        case checkStore
        /// Leave the event loop (local edits still waiting for the lease fail).
        case exit

        /// Whether carrying it out leaves this machine's published state as it is.
        var leavesStatusAsIs: Bool {
            switch self {
            case .publish, .record, .scheduleTimer, .cancelTimer: true
            default: false
            }
        }
    }

    /// What happened, as the participant saw it.
    package enum Event: Sendable, Hashable {
        /// The lifecycle signal says this (level-triggered: fed on every valid read).
        case lifecycle(Lifecycle)
        /// The lifecycle file could not be read as a signal (empty, junk, a symlink, too big),
        /// for `reason`; `at` is the wall clock (ms since 1970) for the published refusal.
        case lifecycleIgnored(String, at: Int64)
        /// The lifecycle file does not exist (no signal: the lifecycle stays as it is).
        case lifecycleMissing
        /// The lease's current holding, after `waitMillis` of waiting. Fed only while the lease
        /// still holds it (a grant released since is stale: `WriterLease` knows, not the rules).
        case leaseGranted(Lease, waitMillis: Double)
        /// The wait for the lease failed (it could not be recorded).
        case leaseFailed(String)
        /// The held lock file was replaced or deleted: taken over (the successor's record names
        /// this epoch), or not.
        case leaseLost(takenOver: Bool, successor: String?)
        /// A takeover waits for a holder that keeps SQLite's write lock (nil: no longer).
        case leaseBlocked(WriterLease.Blocked?)
        /// A participant with a higher priority is foreground and waiting for the lease.
        case higherPriorityWaiting
        /// `becomeWriter` succeeded.
        case writerStarted
        /// `becomeWriter` failed (a storage error).
        case writerStartFailed(String)
        /// `becomeWriter`'s first write failed its fence: the store's epoch moved past this
        /// holding before it recorded itself, so it can never commit.
        case writerStartStale
        /// A configured sync (others are ignored) reached `done`.
        case syncFinished(String)
        /// A configured sync failed, or its rerun could not start. `storeProblem` is what the
        /// store file check says right after (nil: the file is fine); `at` is the wall clock
        /// (ms since 1970) for the next attempt's time.
        case syncFailed(name: String, error: String?, storeProblem: String?, at: Int64)
        /// The store file check found the file deleted, renamed or replaced.
        case storeLost(String)
        /// The store file check found the file this process opened in place again (moved back).
        case storeBack
        /// `checkStore` reopened the store: what the paths hold now is used (the text says what
        /// had changed).
        case storeReopened(String)
        /// `checkStore` found no store it can use at the path yet (the text says why).
        case storeReopenFailed(String)
        /// The sync manager's state (fed whenever it may have changed).
        case managerState(ManagerStateMachine.State)
        /// A timer from `scheduleTimer` fired.
        case timerFired(TimerID)
        /// A local edit admitted by ``beginLocalEdit()`` ended (committed or not).
        case localEditEnded
        /// `stopSyncs` is done; the stop began at `began` (monotonic ms).
        case syncsStopped(began: Double)
        /// `releaseLease` is done.
        case released
        /// `publish` is done.
        case published
        /// `publish` failed.
        case publishFailed(String)
        /// The status file may be gone (a rescan): publish again.
        case publishRequested
        /// SIGTERM/SIGINT or `shutdown()`: hand everything back and leave.
        case shutdown
    }
}
