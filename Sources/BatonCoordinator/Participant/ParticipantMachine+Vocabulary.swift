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
        /// The syncs' stop, begun at `began` (monotonic ms), is done: `stopped`, with its
        /// duration.
        case syncsStopped(began: Double)
    }

    /// What the participant must do. Those marked "→" end with the event(s) named, which the
    /// participant feeds back once it has carried out every action of the same event, ahead of
    /// the events still pending ("→ later": they arrive as the participant's input).
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
        /// Say the stop was requested (for `reason`) and ask the manager to stop. →
        /// `managerStopping`.
        case stopManager(ReleaseReason)
        /// Wait, off the event loop, for the manager to stop. → later `managerStopped`.
        case awaitManagerStop
        /// The save grace is over: end the page being saved at its next record (what it saved
        /// stays).
        case endPageSaveEarly
        /// The stop's deadline passed: interrupt the SQLite statement in flight (its page rolls
        /// back) and abandon a wait for a lock held elsewhere, so that the stop completes.
        case interruptStore
        /// A sync's end that could not be written yet: one more try while the lease is held (past
        /// the deadline, the next holder's recovery sets it `stopped`).
        case flushUnpersisted
        /// What this writer committed into a log that was deleted or replaced is seen by nobody
        /// else: copy it all into the store file before the lease goes (within the deadline).
        case copyBackCompletely
        /// Ask for the log to be copied back after the release, on another thread.
        case checkpointAfterRelease
        /// Stop fencing the manager's writes with the lease; it refuses syncs now. →
        /// `managerState`, then `syncsStopped`.
        case dropWriteAccess
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
        /// Check that `D/writer.lock` is still the file this holding of `lease` locked. → `leaseLost`
        /// when it is not.
        case checkLockFile(Lease)
        /// Read the statuses: does a higher-priority participant wait, alive and foreground? →
        /// `higherPriorityWaiting` when one does.
        case checkPriority
        /// Not the writer: let the manager's refusals name the current writer.
        case refreshWriterHint
        /// Read the sync manager's state. → `managerState`.
        case readManagerState
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
        /// `D/writer.lock` was deleted, replaced or renamed (the holder's check says whether it is
        /// still its file).
        case lockFileChanged
        /// One of the store's files changed: what the store file check says now (nil: all fine).
        case storeChecked(String?)
        /// The directory was read again (the lifecycle signal fed before this): what the store
        /// file check says now (nil: all fine).
        case directoryRead(storeProblem: String?)
        /// `becomeWriter` succeeded.
        case writerStarted
        /// `becomeWriter` failed (a storage error).
        case writerStartFailed(String)
        /// `becomeWriter`'s first write failed its fence: the store's epoch moved past this
        /// holding before it recorded itself, so it can never commit.
        case writerStartStale
        /// `becomeWriter` looked at the store's write guards: the tables whose guard is gone or
        /// changed, each with what is wrong (none: all in place).
        case storeUnguarded([String])
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
        /// A sync's state changed (after its `syncFinished` or `syncFailed`, if any): the
        /// manager's state may have changed too.
        case syncStateChanged
        /// A timer from `scheduleTimer` fired.
        case timerFired(TimerID)
        /// A local edit admitted by ``beginLocalEdit()`` ended (committed or not).
        case localEditEnded
        /// `stopManager` is done: the manager's state now, and when the stop began (monotonic
        /// ms).
        case managerStopping(ManagerStateMachine.State, began: Double)
        /// `awaitManagerStop` is done: the manager stopped.
        case managerStopped
        /// `dropWriteAccess` is done: the syncs have stopped.
        case syncsStopped
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
