import BatonStore

extension SyncManager {
    /// Runs one job inside its own task (so a stop can cancel its request in flight) and
    /// persists how it ended.
    ///
    /// - Returns: the sync's final state, for a run.
    func perform(_ job: Job) async -> SyncState? {
        switch job.kind {
        case .cleanGhosts(let continuation):
            do {
                continuation.resume(returning: try await cleanGhosts(syncId: job.syncId))
            } catch {
                if isInterruption(error, syncId: job.syncId) {
                    continuation.resume(
                        throwing: SyncError(
                            .ghostCleaningStopped, "clean resync ghosts was stopped; nothing was deleted"))
                } else {
                    continuation.resume(throwing: error)
                }
            }
            cancelRequested.remove(job.syncId)
            return nil
        case .run:
            // One that cannot be read is set aside (`failed`, with why), never dropped silently;
            // its waiters resume in `execute`, with nil.
            guard var state = await readForRun(job) else {
                cancelRequested.remove(job.syncId)
                return nil
            }
            do {
                try checkForStop(state.id)
                switch state.type {
                case .syncDown: try await runSyncDown(&state, onUpdate: job.onUpdate)
                case .syncUp: try await runSyncUp(&state, onUpdate: job.onUpdate)
                }
                state.status = .done
                state.progress = 100
                state.error = nil
            } catch {
                // `state` is the last committed one (the run functions take on a new state only
                // once it is persisted), so what follows never moves past what committed.
                if isInterruption(error, syncId: state.id) {
                    state.status = .stopped
                } else {
                    state.status = .failed
                    state.error = String(describing: error)
                    logger.warning(
                        "sync failed",
                        metadata: ["baton.sync": "\(state.id)", "baton.error": "\(state.error ?? "")"])
                }
            }
            state.endTime = WallClock.nowMillis()
            cancelRequested.remove(state.id)
            // Waiters resume in `execute`, once this job is no longer current.
            await persistFinal(state, onUpdate: job.onUpdate)
            return state
        }
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
