// The lifecycle and lease rules: who waits, who writes, how a hand-over goes and ends.
extension ParticipantMachine {
    mutating func lifecycle(_ lifecycle: Lifecycle) -> [Action] {
        let cleared = clearRefusedSignal()
        guard !shuttingDown else { return cleared }
        var actions: [Action] = (lifecycle == desired ? [] : [.record(.lifecycle(lifecycle))]) + cleared
        desired = lifecycle
        switch (lifecycle, phase) {
        case (.foreground, .background):
            phase = .waiting
            actions += [.publish] + acquireUnlessStoreLost()
        case (.background, .waiting):
            phase = .background
            actions += cancelRecovery(.lease) + [.cancelAcquiring, .publish]
        case (.background, .writer(let lease)):
            actions += beginRelease(lease, .background)
        default:
            // Foreground while waiting or writing, background while background: nothing new.
            // While releasing, `released` consults `desired`.
            break
        }
        return actions
    }

    /// The lifecycle file holds something that is no signal: said and published once per
    /// reason; the lifecycle stays as it was.
    mutating func lifecycleRefused(_ reason: String, at: Int64) -> [Action] {
        guard refusedSignal?.reason != reason else { return [] }
        refusedSignal = RefusedSignal(reason: reason, at: at)
        return [.record(.lifecycleIgnored(reason)), .publish]
    }

    /// The lifecycle file holds a valid signal again, or is gone: the refusal is over.
    mutating func clearRefusedSignal() -> [Action] {
        guard refusedSignal != nil else { return [] }
        refusedSignal = nil
        return [.publish]
    }

    /// Only a participant waiting for the lease takes it; any other lease goes back untouched,
    /// except the one it holds already (a second grant of it).
    mutating func leaseGranted(_ lease: Lease, waitMillis: Double) -> [Action] {
        guard case .waiting = phase, !shuttingDown else {
            return phase.lease == lease ? [] : [.releaseUnused(lease)]
        }
        phase = .writer(lease)
        var actions = resetRecovery(.lease)
        if case .leaseRecordFailed = problem { actions += setProblem(nil) }
        return actions + [
            .record(.leaseAcquired(lease, waitMillis: waitMillis)), .becomeWriter(lease), .publish,
        ]
    }

    mutating func leaseFailed(_ reason: String) -> [Action] {
        guard !shuttingDown else { return [] }
        // A wait cancelled just as it failed tries nothing again: it says so, and no more.
        guard case .waiting = phase, !isStoreLost else { return [.record(.leaseFailed(reason))] }
        return [.record(.leaseFailed(reason))] + setProblem(.leaseRecordFailed(reason))
            + scheduleRecovery(.lease)
    }

    /// Taken over, the holding is fenced (its writes fail; the taker closes its interval);
    /// with its lock file gone, it steps down as well and still records its release.
    mutating func leaseLost(takenOver: Bool, successor: String?) -> [Action] {
        switch phase {
        case .writer(let lease):
            let note = Action.record(.leaseLost(lease, takenOver: takenOver, successor: successor))
            return [note] + beginRelease(lease, takenOver ? .fenced : .lockLost, fenced: takenOver)
        case .releasing(let release):
            let note = Action.record(.leaseLost(release.lease, takenOver: takenOver, successor: successor))
            guard takenOver else { return [note] }
            // Already stopping (background, yield, shutdown, ...): the stop goes on and writes
            // nothing that could land; the release is no longer recorded.
            phase = .fenced(release)
            return [note, .publish]
        case .background, .waiting, .fenced, .finished:
            return []
        }
    }

    mutating func leaseBlocked(_ blocked: WriterLease.Blocked?) -> [Action] {
        guard !shuttingDown else { return [] }
        if let blocked {
            return [.record(.leaseBlocked(blocked))] + setProblem(.takeoverBlocked(blocked.message))
        }
        guard case .takeoverBlocked = problem else { return [] }
        return [.record(.leaseBlocked(nil))] + setProblem(nil)
    }

    /// The outcome of `becomeWriter`, for the lease still held as writer (else ignored).
    mutating func writerStart(_ outcome: Event) -> [Action] {
        guard case .writer(let lease) = phase else { return [] }
        switch outcome {
        case .writerStarted:
            admitsEdits = true
            var actions = resetRecovery(.writerStart)
            if case .writerStartFailed = problem { actions += setProblem(nil) }
            // A higher-priority participant that began to wait after this wait's last look, but
            // whose status was read before the grant: no change is coming to say so again.
            return actions + [.resumeEditWaiters, .checkPriority]
        case .writerStartFailed(let error):
            // Holding the lease with nothing running helps nobody: try again after a pause.
            // Edits wait for a start that succeeds (their soups may not be registered).
            return setProblem(.writerStartFailed(error)) + scheduleRecovery(.writerStart)
        default:
            // Trying again with this holding would keep the lock from everyone and never
            // commit: step down fenced and wait for a fresh epoch.
            let note = Action.record(.leaseLost(lease, takenOver: true, successor: nil))
            return [note] + beginRelease(lease, .fenced, fenced: true)
        }
    }

    /// One of the store's files went away: say so once, and as writer hand the lease over (its
    /// syncs must not retry: they would only fail again). Until the files are back, or the store
    /// is reopened, nobody here takes the lease: a holder could only fail to start and hand it
    /// back, in a loop. Without a lease, the store is checked again after a pause that doubles.
    mutating func storeLost(_ reason: String) -> [Action] {
        var actions: [Action] = []
        let wasLost = isStoreLost
        // Once lost, the problem shown is the latest check's (more precise than what the
        // detection says, which would otherwise flip it back and forth).
        if !wasLost {
            actions = [.record(.storeLost(reason))] + setProblem(.storeLost(reason))
        }
        switch phase {
        case .writer(let lease) where !shuttingDown:
            actions += beginRelease(lease, .storeLost)
        case .waiting where !wasLost:
            actions += cancelRecovery(.lease) + [.cancelAcquiring]
        default:
            break
        }
        return actions + scheduleStoreCheck()
    }

    /// The store's files are usable again: the one this process opened is back in place
    /// (`note` is `storeBack`), or the store was reopened (`storeReopened`). The problem is over,
    /// and a participant waiting in the foreground asks for the lease again.
    mutating func storeBack(_ note: Note) -> [Action] {
        guard isStoreLost else { return [] }
        var actions = resetRecovery(.store) + cancelRecovery(.lease) + [Action.record(note)] + setProblem(nil)
        if case .waiting = phase, !shuttingDown { actions += [.startAcquiring] }
        return actions
    }

    /// A check found no store to use yet: say why, and check again after a longer pause.
    mutating func storeReopenFailed(_ reason: String) -> [Action] {
        guard isStoreLost else { return [] }
        return setProblem(.storeLost(reason)) + scheduleStoreCheck()
    }

    /// The next check of a lost store, unless one is scheduled, a lease is still held (its
    /// release schedules it) or the participant is shutting down.
    mutating func scheduleStoreCheck() -> [Action] {
        guard isStoreLost, phase.lease == nil, !shuttingDown, phase != .finished else { return [] }
        return scheduleRecovery(.store)
    }

    /// Whether the store file is lost (deleted, renamed or replaced) as far as this process knows.
    var isStoreLost: Bool {
        if case .storeLost = problem { return true }
        return false
    }

    /// `startAcquiring`, unless the store file is lost (``storeBack(_:)`` asks then).
    func acquireUnlessStoreLost() -> [Action] {
        isStoreLost ? [] : [.startAcquiring]
    }

    /// Writer to releasing (or fenced): no more retries or writer-start recoveries (their
    /// status goes with them), then the syncs stop.
    mutating func beginRelease(_ lease: Lease, _ reason: ReleaseReason, fenced: Bool = false) -> [Action] {
        let release = Release(lease: lease, reason: reason)
        phase = fenced ? .fenced(release) : .releasing(release)
        admitsEdits = false
        return cancelRetries() + cancelRecovery(.writerStart) + [.publish, .stopManager(reason)]
    }

    /// The lease goes once the syncs have stopped and no local edit runs: nothing commits
    /// after it is let go. Fenced, the release is not recorded (the taker closes the interval).
    func releaseIfDue() -> [Action] {
        guard localEdits == 0, let release, case .stopped(let began) = release.stop else { return [] }
        return [
            .releaseLease(
                release.lease, reason: release.reason, recordRelease: phase.name != .fenced, stopBegan: began)
        ]
    }

    mutating func released() -> [Action] {
        guard let release, case .stopped = release.stop, localEdits == 0 else { return [] }
        if shuttingDown { return finish() }
        if desired == .foreground {
            phase = .waiting
            return [.publish] + acquireUnlessStoreLost() + scheduleStoreCheck()
        }
        phase = .background
        return [.publish] + scheduleStoreCheck()
    }

    mutating func shutdown() -> [Action] {
        guard !shuttingDown else { return [] }
        shuttingDown = true
        switch phase {
        case .writer(let lease): return beginRelease(lease, .shutdown)
        case .releasing, .fenced: return []
        case .waiting: return [.cancelAcquiring] + finish()
        case .background, .finished: return finish()
        }
    }

    /// Finished: every timer cancelled, the status published, the loop left.
    mutating func finish() -> [Action] {
        phase = .finished
        var actions = cancelRetries()
        for recovery in Recovery.allCases { actions += cancelRecovery(recovery) }
        return actions + [.publish, .exit]
    }
}
