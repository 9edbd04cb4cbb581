import BatonStore

/// A change of a sync's status. A status moves only here: the statuses are set by the
/// constructors below and written by ``SyncManager/changeStatus(_:onUpdate:)`` (its one write,
/// ``SyncManager/write(_:through:)``, also writes again what could not be written).
package enum StatusChange: Sendable, Hashable {
    /// The sync's whole state, its status changed: `running` when a run is submitted, `done`,
    /// `failed` or `stopped` when it ends.
    case state(SyncState)
    /// A sync set aside (this version cannot read it): `failed` with this error, by a write of
    /// its status, error and end time only (its row cannot be written back whole).
    case setAside(SetAsideSync)

    package var syncId: Int64 {
        switch self {
        case .state(let state): state.id
        case .setAside(let sync): sync.id
        }
    }

    /// The sync's new state, when it is written whole.
    package var state: SyncState? {
        if case .state(let state) = self { return state }
        return nil
    }

    /// A run's `running`, written when it is submitted.
    package var isStart: Bool {
        state?.status == .running
    }

    /// A run submitted: `running` from now, at progress 0 with its size unknown. As Mobile Sync,
    /// the last failure's error stays while the sync runs again (a retry shows why the previous
    /// attempt failed); `done` clears it.
    package static func start(_ state: SyncState) -> StatusChange {
        var running = state
        running.status = .running
        running.progress = 0
        running.totalSize = -1
        running.startTime = WallClock.nowMillis()
        running.endTime = nil
        return .state(running)
    }

    /// A run that completed: `done` at 100%, with no error.
    package static func done(_ state: SyncState) -> StatusChange {
        var done = ended(state, .done)
        done.progress = 100
        done.error = nil
        return .state(done)
    }

    /// A run that failed with `error`.
    package static func failed(_ state: SyncState, error: String) -> StatusChange {
        var failed = ended(state, .failed)
        failed.error = error
        return .state(failed)
    }

    /// A run stopped (by a stop, a cancel, or the lease moving on), or a job a stop reached
    /// before it ran: resumable from its last committed state.
    package static func stopped(_ state: SyncState) -> StatusChange {
        .state(ended(state, .stopped))
    }

    private static func ended(_ state: SyncState, _ status: SyncStatus) -> SyncState {
        var ended = state
        ended.status = status
        ended.endTime = WallClock.nowMillis()
        return ended
    }
}
