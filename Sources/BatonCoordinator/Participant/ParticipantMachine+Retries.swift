import BatonStore

extension ParticipantMachine {
    /// What keeps the participant from its work now; its ``description`` is the published text.
    package enum Problem: Sendable, Hashable, CustomStringConvertible {
        /// Taking the lease failed (its record in the store could not be written).
        case leaseRecordFailed(String)
        /// Holding the lease, the syncs could not be started.
        case writerStartFailed(String)
        /// The store file was deleted, renamed or replaced (the store's own reason).
        case storeLost(String)
        /// A takeover waits for a holder that keeps SQLite's write lock (its message names the
        /// holder and the remedy).
        case takeoverBlocked(String)
        /// Tables whose write guard is gone or changed: something other than Baton changed the
        /// store (the text names them and what is wrong).
        case storeUnguarded(String)

        package var description: String {
            switch self {
            case .leaseRecordFailed(let reason): "could not record the writer lease (\(reason)); trying again"
            case .writerStartFailed(let error): "could not start syncs as writer (\(error)); trying again"
            case .storeLost(let reason): reason
            case .takeoverBlocked(let message): message
            case .storeUnguarded(let tables):
                "something other than Baton changed the store: \(tables); its writes may have bypassed the lease (`baton lease check --strict` names them; `baton store init` restores the guards)"
            }
        }
    }

    /// What is tried again, after a pause that doubles, when it failed on a storage error.
    package enum Recovery: String, Sendable, Hashable, CaseIterable {
        /// Taking the lease.
        case lease
        /// Starting the syncs as writer.
        case writerStart = "writer-start"
        /// Publishing the status.
        case publish
        /// Checking the store's files after one was lost, reopening them when the paths hold a
        /// store again.
        case store
    }

    /// A timer the machine asked for (only the machine makes one). The serial makes each
    /// scheduling unique, so a timer that fires after it was cancelled (or replaced) is
    /// recognised and ignored.
    package struct TimerID: Sendable, Hashable, CustomStringConvertible {
        /// What the timer is for.
        package enum Kind: Sendable, Hashable {
            /// Run a failed configured sync again.
            case retry(String)
            /// Try a failed step again.
            case recovery(Recovery)
            /// A stop's save grace is over.
            case saveGrace
            /// A stop's deadline passed.
            case stopDeadline
        }

        /// What the timer is for.
        package let kind: Kind
        /// Unique among this machine's timers.
        package let serial: Int

        init(_ kind: Kind, serial: Int) {
            self.kind = kind
            self.serial = serial
        }

        package var description: String {
            switch kind {
            case .retry(let name): "retry(\(name))#\(serial)"
            case .recovery(let recovery): "recovery(\(recovery.rawValue))#\(serial)"
            case .saveGrace: "saveGrace#\(serial)"
            case .stopDeadline: "stopDeadline#\(serial)"
            }
        }
    }

    /// The configured syncs that failed and wait for their next attempt (or are in it), by
    /// name: what the status publishes.
    package var retrying: [SyncRetry] {
        retries.compactMap { name, state in
            state.pending.map {
                SyncRetry(
                    name: name, attempt: state.failures, lastError: $0.lastError, nextAttempt: $0.nextAttempt)
            }
        }.sorted { $0.name < $1.name }
    }

    /// Every timer scheduled and neither fired nor cancelled.
    package var pendingTimers: Set<TimerID> {
        var timers = Set(retries.values.compactMap { $0.pending?.timer })
        for state in recoveries.values { if let timer = state.timer { timers.insert(timer) } }
        if case .waiting(let wait) = release?.stop {
            for timer in [wait.grace, wait.deadline] { if let timer { timers.insert(timer) } }
        }
        return timers
    }

    /// Failures in a row of the configured sync `name` (0 once it is `done`).
    package func failures(of name: String) -> Int { retries[name]?.failures ?? 0 }

    /// Recoveries of `recovery` scheduled in a row (0 once the step succeeds).
    package func failures(of recovery: Recovery) -> Int { recoveries[recovery]?.failures ?? 0 }

    /// `base` doubled for each failure in a row before `attempt`, up to `max` (the shift stops
    /// at 16 so that it cannot overflow).
    package static func backoff(_ base: Duration, attempt: Int, max: Duration) -> Duration {
        Swift.min(base * (1 << Swift.min(Swift.max(attempt - 1, 0), 16)), max)
    }

    // MARK: - Retrying failed syncs

    /// Runs a failed configured sync again after a pause that doubles with each failure in a
    /// row (a server that is down gets a growing pause, not a stream of requests): only as
    /// writer, with a retry delay, and when no retry of it waits already.
    mutating func scheduleRetry(_ name: String, error: String?, at now: Int64) -> [Action] {
        guard case .writer = phase, !shuttingDown, let base = retryDelay else { return [] }
        var state = retries[name] ?? SyncRetries()
        guard state.pending?.timer == nil else { return [] }
        state.failures += 1
        let delay = Self.backoff(base, attempt: state.failures, max: maxRetryDelay)
        let timer = nextTimer(.retry(name))
        state.pending = PendingRetry(
            lastError: error ?? state.pending?.lastError ?? "unknown",
            nextAttempt: now + delay.inWholeMilliseconds,
            timer: timer)
        retries[name] = state
        return [
            .record(.syncRetry(name: name, attempt: state.failures, delay: delay)),
            .scheduleTimer(timer, after: delay), .publish,
        ]
    }

    /// `done` ends the failures in a row and the retry the status shows.
    mutating func syncFinished(_ name: String) -> [Action] {
        guard configuredSyncs.contains(name), let state = retries.removeValue(forKey: name) else { return [] }
        guard let pending = state.pending else { return [] }
        return (pending.timer.map { [.cancelTimer($0)] } ?? []) + [.publish]
    }

    /// A release drops the retries waiting and their status (the next holder's restart resumes
    /// the syncs); the failures in a row stay until a sync is `done`.
    mutating func cancelRetries() -> [Action] {
        var actions: [Action] = []
        for name in retries.keys.sorted() {
            if let timer = retries[name]?.pending?.timer { actions.append(.cancelTimer(timer)) }
            retries[name]?.pending = nil
        }
        return actions
    }

    // MARK: - Recovering from storage failures

    /// Tries `recovery` again after a pause that doubles with each failure in a row (the retry
    /// delay, 500 ms without one, up to the maximum), unless it is scheduled already.
    mutating func scheduleRecovery(_ recovery: Recovery) -> [Action] {
        var state = recoveries[recovery] ?? RecoveryState()
        guard state.timer == nil else { return [] }
        state.failures += 1
        let delay = Self.backoff(
            retryDelay ?? .milliseconds(500), attempt: state.failures, max: maxRetryDelay)
        let timer = nextTimer(.recovery(recovery))
        state.timer = timer
        recoveries[recovery] = state
        return [.scheduleTimer(timer, after: delay)]
    }

    /// Its timer goes; its failures in a row stay.
    mutating func cancelRecovery(_ recovery: Recovery) -> [Action] {
        guard let timer = recoveries[recovery]?.timer else { return [] }
        recoveries[recovery]?.timer = nil
        return [.cancelTimer(timer)]
    }

    /// The step succeeded: nothing to try again, and the next failure starts from the base delay.
    mutating func resetRecovery(_ recovery: Recovery) -> [Action] {
        defer { recoveries[recovery] = nil }
        return cancelRecovery(recovery)
    }

    /// Says so in the log the first time in a row, and publishes again until it lands, so
    /// `baton status` never keeps showing a stale phase.
    mutating func publishFailed(_ error: String) -> [Action] {
        let first = failures(of: .publish) == 0
        return (first ? [.record(.statusFailed(error))] : []) + scheduleRecovery(.publish)
    }

    mutating func timerFired(_ id: TimerID) -> [Action] {
        switch id.kind {
        case .saveGrace, .stopDeadline:
            return stopTimerFired(id)
        case .retry(let name):
            guard retries[name]?.pending?.timer == id else { return [] }
            // The status keeps the retry while it runs.
            retries[name]?.pending?.timer = nil
            guard case .writer = phase, !shuttingDown else { return [] }
            return [.runSync(name)]
        case .recovery(let recovery):
            guard recoveries[recovery]?.timer == id else { return [] }
            recoveries[recovery]?.timer = nil
            switch (recovery, phase) {
            case (.lease, .waiting) where !shuttingDown: return acquireUnlessStoreLost()
            case (.writerStart, .writer(let lease)): return [.becomeWriter(lease)]
            case (.publish, _): return [.publish]
            case (.store, _): return isStoreLost && phase.lease == nil && !shuttingDown ? [.checkStore] : []
            default: return []
            }
        }
    }

    // MARK: - Problems and timers

    /// The writer looked at the store's write guards: missing ones are the problem shown until a
    /// later look finds them all in place.
    mutating func storeUnguarded(_ tables: [String]) -> [Action] {
        guard !tables.isEmpty else {
            guard case .storeUnguarded = problem else { return [] }
            return setProblem(nil)
        }
        return setProblem(.storeUnguarded(tables.joined(separator: "; ")))
    }

    /// Notes what keeps the participant from its work (or that nothing does) and publishes it.
    /// A lost store outranks every other problem: until it is back, only news of the store
    /// replace it (the rules read it off the problem).
    mutating func setProblem(_ new: Problem?) -> [Action] {
        guard new != problem else { return [] }
        if isStoreLost, let new {
            guard case .storeLost = new else { return [] }
        }
        problem = new
        return [.record(.problem(new?.description)), .publish]
    }

    mutating func nextTimer(_ kind: TimerID.Kind) -> TimerID {
        lastTimerSerial += 1
        return TimerID(kind, serial: lastTimerSerial)
    }
}
