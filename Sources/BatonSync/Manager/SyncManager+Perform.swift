import BatonStore

extension SyncManager {
    /// Runs one job (inside its own task, so a stop can cancel its request in flight) and
    /// persists how it ended.
    ///
    /// - Returns: the sync's final state, for a run that could read it.
    func perform(_ job: Job) async -> SyncState? {
        switch job.kind {
        case .cleanGhosts:
            let result: Result<Int, any Error>
            do {
                let incremental = jobs[job.id]?.incremental ?? false
                result = .success(try await cleanGhosts(syncId: job.syncId, incremental: incremental))
            } catch  where isInterruption(error, syncId: job.syncId) {
                result = .failure(
                    SyncError(.ghostCleaningStopped, "clean resync ghosts was stopped; nothing was deleted"))
            } catch {
                result = .failure(error)
            }
            resumeGhostCleaning(job, with: result)
            return nil
        case .run:
            // One that cannot be read, or whose read fails, is set aside (`failed`, with why),
            // never dropped silently; its waiters resume with nil.
            guard let state = await readForRun(job) else { return nil }
            let onUpdate = jobs[job.id]?.onUpdate
            let end = await runToEnd(state, onUpdate: onUpdate)
            await changeStatus(end, onUpdate: onUpdate)
            return end.state
        }
    }

    /// Runs a sync; returns how it ended.
    ///
    /// The run functions take on a new state only once it is persisted, so the state an end
    /// is made from is the last committed one and never moves past what committed.
    func runToEnd(_ state: SyncState, onUpdate: SyncUpdateBlock?) async -> StatusChange {
        var state = state
        do {
            try checkForStop(state.id)
            switch state.type {
            case .syncDown: try await runSyncDown(&state, onUpdate: onUpdate)
            case .syncUp: try await runSyncUp(&state, onUpdate: onUpdate)
            }
            return .done(state)
        } catch {
            if isInterruption(error, syncId: state.id) { return .stopped(state) }
            let message = String(describing: error)
            logger.warning(
                "sync failed", metadata: ["baton.sync": "\(state.id)", "baton.error": "\(message)"])
            return .failed(state, error: message)
        }
    }

    /// A queued job reached by a stop: its sync is `stopped` without running; ghost cleaning
    /// fails.
    ///
    /// - Returns: the sync's final state, for a run that could read it.
    func endWithoutRunning(_ job: Job) async -> SyncState? {
        switch job.kind {
        case .cleanGhosts:
            resumeGhostCleaning(
                job,
                with: .failure(
                    SyncError(
                        .ghostCleaningStopped,
                        "clean resync ghosts was stopped before it ran; nothing was deleted")))
            return nil
        case .run:
            // One that cannot be read is set aside (`failed`, with why) rather than left `running`.
            guard let state = await readForRun(job) else { return nil }
            let end = StatusChange.stopped(state)
            await changeStatus(end, onUpdate: jobs[job.id]?.onUpdate)
            return end.state
        }
    }

    /// Resumes a clean resync ghosts' caller, once.
    private func resumeGhostCleaning(_ job: Job, with result: Result<Int, any Error>) {
        jobs[job.id]?.ghosts?.resume(with: result)
        jobs[job.id]?.ghosts = nil
    }
}

extension SyncManager {
    /// The sync's target, rebuilt from its stored description.
    ///
    /// - Throws: `unreadableSync` naming the sync when this version cannot build it (a type it
    ///   does not know, written by another version or by hand): the run ends `failed` with it.
    func syncDownTarget(of state: SyncState) throws -> any SyncDownTarget {
        do {
            return try factory.syncDownTarget(from: state.target)
        } catch {
            throw Self.unusableTarget(state, error)
        }
    }

    /// As ``syncDownTarget(of:)``, for a sync up.
    func syncUpTarget(of state: SyncState) throws -> any SyncUpTarget {
        do {
            return try factory.syncUpTarget(from: state.target)
        } catch {
            throw Self.unusableTarget(state, error)
        }
    }

    static func unusableTarget(_ state: SyncState, _ error: any Error) -> SyncError {
        SyncError(
            .unreadableSync,
            "sync \(UnreadableSyncRow.label(id: state.id, name: state.name)) in the store has a target this version cannot use (\(error)); it does not run until it is repaired"
        )
    }
}
