import BatonStore

// Where a sync's status moves: one function for every path, and its one write.
extension SyncManager {
    /// Moves a sync to a new status and tells who must hear of it: the one place a sync's status
    /// changes, for a submitted run (`running`), a run's end (`done`, `failed`, `stopped`), a
    /// queued job a stop reached (`stopped`) and a sync set aside (`failed`).
    ///
    /// `running` must commit before the run is queued: when its write fails, nobody hears of it
    /// and the error is returned for the submitter to throw. An end or a set-aside lands even
    /// from a cancelled task, and a failed write does not lose it: the machine keeps it and it
    /// is written again, with a growing pause, until it lands, the sync runs again, or the lease
    /// moves on (the store would otherwise go on saying `running` with nothing running it).
    /// Listeners hear of it at once either way.
    ///
    /// - Returns: the error of a write that failed.
    @discardableResult
    func changeStatus(_ change: StatusChange, onUpdate: SyncUpdateBlock?) async -> (any Error)? {
        var failure: (any Error)?
        do {
            try await write(change, through: writer())
            carryOutAtOnce(machine.handle(.changeWritten(change)))
        } catch {
            failure = error
            carryOutAtOnce(machine.handle(.changeFailed(change)))
        }
        switch change {
        case .state(let state) where state.status == .running:
            guard failure == nil else { return failure }
            notify(state, onUpdate: onUpdate)
        case .state(let state):
            if let failure {
                logger.error(
                    "could not persist the end of a sync; will try again",
                    metadata: ["baton.sync": "\(state.id)", "baton.error": "\(failure)"])
            }
            notify(state, onUpdate: onUpdate)
        case .setAside(let sync):
            if let failure {
                logger.error(
                    "could not mark a set-aside sync failed; will try again",
                    metadata: ["baton.sync": "\(sync.id)", "baton.error": "\(failure)"])
            }
            listeners.setAsides.send(sync)
        }
        return failure
    }

    /// Writes a status change through `access`, in a task of its own: a stop's cancellation does
    /// not reach it, and the manager stays free to take calls (a `stop()`) while the write waits
    /// for a lock held elsewhere. Every status change is written here, kept ones again too.
    func write(_ change: StatusChange, through access: WriteAccess) async throws {
        switch change {
        case .state(let state):
            let row = state.row
            try await Task.detached {
                try await access.write { try $0.updateSyncState(row) }
            }.value
        case .setAside(let sync):
            let (id, error, ended) = (sync.id, sync.error.message, WallClock.nowMillis())
            let failed = SyncStatus.failed.rawValue
            _ = try await Task.detached {
                try await access.write {
                    try $0.setSyncStatus(id: id, status: failed, error: error, endTime: ended)
                }
            }.value
        }
    }

    /// Turns every sync left `running` by a dead process into `stopped`, in one write (no job of
    /// this manager holds one: ``recoverInterruptedSyncs(under:)`` checks).
    ///
    /// - Returns: the ids it changed.
    func recoverInterrupted(through access: WriteAccess) async throws -> [Int64] {
        try await access.write { transaction in
            try transaction.changeSyncStatus(
                from: SyncStatus.running.rawValue, to: SyncStatus.stopped.rawValue)
        }
    }

    /// Tries once more to write the status changes that could not be written (the coordinator
    /// does this before it lets go of the lease).
    ///
    /// - Returns: the ids still unpersisted.
    @discardableResult
    public func flushUnpersisted() async -> [Int64] {
        await carryOut(machine.handle(.flushAsked))
        return unpersistedSyncIds
    }
}
