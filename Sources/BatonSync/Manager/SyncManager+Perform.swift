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
            guard var state = try? SyncState.byId(job.syncId, store: store) else {
                resumeSyncWaiters(job.syncId, nil)
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
