/// The sync manager's stop/restart rules as a pure state machine: events in, actions out, no
/// I/O. `SyncManager` feeds it and carries out what it returns.
public struct ManagerStateMachine: Sendable, Hashable {
    /// Mobile Sync's manager states.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case acceptingSyncs = "accepting_syncs"
        case stopRequested = "stop_requested"
        case stopped
    }

    /// What the manager must do after an event.
    public enum Action: Sendable, Hashable {
        case none
        /// Stop the running task at its next check (and cancel its request in flight), and
        /// mark queued tasks stopped.
        case interruptTasks
        /// Accept a submitted sync.
        case accept
        /// Refuse a submitted sync: the manager is not accepting.
        case reject(State)
        /// Restart: accept syncs again (and reSync stopped ones if asked).
        case resume
        /// Restart asked while tasks are still ending: wait for them, then ask again.
        case waitForStop
    }

    public private(set) var state: State

    public init(state: State = .acceptingSyncs) {
        self.state = state
    }

    /// `stop()`: with tasks running or queued, a stop is requested; with none, stopped at once.
    public mutating func stop(activeTasks: Int) -> Action {
        switch state {
        case .acceptingSyncs:
            if activeTasks > 0 {
                state = .stopRequested
                return .interruptTasks
            }
            state = .stopped
            return .none
        case .stopRequested:
            return activeTasks > 0 ? .interruptTasks : .none
        case .stopped:
            return .none
        }
    }

    /// A task ended; when the last one ends, a requested stop completes.
    public mutating func taskEnded(remaining: Int) -> Action {
        if state == .stopRequested, remaining == 0 { state = .stopped }
        return .none
    }

    /// `syncDown`/`syncUp`/`reSync`/`cleanResyncGhosts`.
    public func submit() -> Action {
        state == .acceptingSyncs ? .accept : .reject(state)
    }

    /// `restart(...)`: allowed when stopping (after the tasks end) or stopped.
    public mutating func restart() -> Action {
        switch state {
        case .stopped:
            state = .acceptingSyncs
            return .resume
        case .stopRequested:
            return .waitForStop
        case .acceptingSyncs:
            return .none
        }
    }

    /// `isStopping()`: a stop was requested and tasks are still running.
    public var isStopping: Bool { state == .stopRequested }
    /// `isStopped()`: a stop was requested and every task has ended.
    public var isStopped: Bool { state == .stopped }
}
