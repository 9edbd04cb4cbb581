import BatonSync

// The stop of the syncs before a release, what the participant's observations of the shared
// directory call for, and how a local edit is admitted.
extension ParticipantMachine {
    /// How a local edit that asks now goes on.
    package enum EditAdmission: Sendable, Hashable {
        /// It may begin (``beginLocalEdit()`` answers).
        case now
        /// It waits up to this long for the writer to start (then fails `notWriter`).
        case wait(Duration)
        /// It fails at once: not the writer, and no timeout was given.
        case refused
    }

    /// What a local edit asking now does: go ahead when edits are admitted; otherwise wait up to
    /// `timeout` when given, or, for a writer still starting (registering its soups), up to the
    /// stop deadline, as for a writer to come; else fail at once.
    package func admitEdit(waitingUpTo timeout: Duration?) -> EditAdmission {
        if admitsEdits { return .now }
        if let timeout { return .wait(timeout) }
        return phase.name == .writer ? .wait(stopDeadline) : .refused
    }

    /// What this participant is, as a `notWriter` error says it: `starting as the writer` while
    /// the writer has not started, else its phase.
    package var notWriterState: String {
        phase.name == .writer ? "starting as the writer" : phase.name.rawValue
    }

    /// The hand-over under way (releasing or fenced), if any.
    package var release: Release? {
        switch phase {
        case .releasing(let release), .fenced(let release): release
        case .background, .waiting, .writer, .finished: nil
        }
    }

    /// The participant waits for the manager's stop (the grace's and deadline's timers run).
    package var waitsForManagerStop: Bool {
        if case .waiting = release?.stop { return true }
        return false
    }

    /// Moves the hand-over under way to `stop` (its phase stays as it is).
    mutating func setStop(_ stop: Stop) {
        switch phase {
        case .releasing(var release):
            release.stop = stop
            phase = .releasing(release)
        case .fenced(var release):
            release.stop = stop
            phase = .fenced(release)
        case .background, .waiting, .writer, .finished:
            break
        }
    }

    /// The manager was asked to stop: its state is noted; a save grace of zero ends the page
    /// being saved at once, a longer one (at most the deadline) is timed, the deadline is timed,
    /// and the participant waits for the manager.
    mutating func managerStopping(_ state: ManagerStateMachine.State, began: Double) -> [Action] {
        guard case .requested = release?.stop else { return [] }
        var actions = noteManagerState(state)
        var wait = StopWait(began: began)
        let grace = saveGrace.map { Swift.min($0, stopDeadline) }
        if grace == .zero {
            actions.append(.endPageSaveEarly)
        } else if let grace {
            let timer = nextTimer(.saveGrace)
            wait.grace = timer
            actions.append(.scheduleTimer(timer, after: grace))
        }
        let deadline = nextTimer(.stopDeadline)
        wait.deadline = deadline
        setStop(.waiting(wait))
        return actions + [.scheduleTimer(deadline, after: stopDeadline), .awaitManagerStop]
    }

    /// Past the save grace, the page being saved ends at its next record. Past the deadline, the
    /// store is interrupted (after the page save is ended, when the grace had not yet passed).
    mutating func stopTimerFired(_ id: TimerID) -> [Action] {
        guard case .waiting(var wait) = release?.stop else { return [] }
        if id == wait.grace {
            wait.grace = nil
            setStop(.waiting(wait))
            return [.endPageSaveEarly]
        }
        guard id == wait.deadline else { return [] }
        var actions: [Action] = []
        if let grace = wait.grace {
            actions = [.cancelTimer(grace), .endPageSaveEarly]
            wait.grace = nil
        }
        wait.deadline = nil
        wait.deadlinePassed = true
        setStop(.waiting(wait))
        return actions + [.interruptStore]
    }

    /// The manager stopped: the stop's timers go; within the deadline, the sync ends not yet
    /// written get one more try; the stop is said; the log is copied back whole before the
    /// release when the store was lost (else after it); then the write access goes.
    mutating func managerStopped() -> [Action] {
        guard let release, case .waiting(let wait) = release.stop else { return [] }
        setStop(.ending(began: wait.began))
        var actions = [wait.grace, wait.deadline].compactMap { $0.map(Action.cancelTimer) }
        if !wait.deadlinePassed { actions.append(.flushUnpersisted) }
        actions.append(.record(.syncsStopped(began: wait.began)))
        actions.append(release.reason == .storeLost ? .copyBackCompletely : .checkpointAfterRelease)
        return actions + [.dropWriteAccess]
    }

    /// The stop is done: the lease goes once no local edit runs.
    mutating func syncsStopped() -> [Action] {
        guard case .ending(let began) = release?.stop else { return [] }
        setStop(.stopped(began: began))
        return releaseIfDue()
    }

    // MARK: - Observations

    /// `D/writer.lock` changed: a holder checks that it still holds the file it locked (fenced,
    /// it already steps down without writing).
    func lockFileChanged() -> [Action] {
        switch phase {
        case .writer(let lease): [.checkLockFile(lease)]
        case .releasing(let release): [.checkLockFile(release.lease)]
        case .background, .waiting, .fenced, .finished: []
        }
    }

    /// A store file check: a problem means the store is lost; none, after one, that it is back.
    mutating func storeChecked(_ problem: String?) -> [Action] {
        if let problem { return storeLost(problem) }
        return isStoreLost ? storeBack(.storeBack) : []
    }

    /// The directory was read again: a lost (or returned) store file is all that matters then;
    /// otherwise the writer looks for a higher-priority participant waiting, and one without
    /// the lease names the current writer in the manager's refusals (one handing the lease over
    /// sets its refusal as its write access goes).
    mutating func directoryRead(storeProblem: String?) -> [Action] {
        if storeProblem != nil || isStoreLost { return storeChecked(storeProblem) }
        switch phase {
        case .writer: return [.checkPriority]
        case .background, .waiting: return [.refreshWriterHint]
        case .releasing, .fenced, .finished: return []
        }
    }
}
