/// The coordinator's hand-over policy as a pure state machine: lifecycle, lease and priority
/// events in, actions out. `Participant` carries the actions out; tests drive it with no I/O.
public struct HandOverStateMachine: Sendable, Hashable {
    /// Where the participant is with respect to the writer lease.
    public enum Phase: String, Sendable, Hashable, Codable {
        /// Not writing and not asking to.
        case background
        /// Foreground, waiting for the lease.
        case waitingForLease = "waiting"
        /// Holding the lease; its syncs run.
        case writer
        /// Stopping its syncs to hand the lease over.
        case releasing
        /// The lease was taken over while this process was frozen or hung: its writes fail
        /// their fence; it stops its syncs (resumable) without writing, then waits again.
        case fenced
        /// Shut down for good.
        case finished
    }

    /// Why the writer hands the lease over.
    public enum ReleaseReason: String, Sendable, Hashable {
        case background
        /// A higher-priority participant is foreground and waiting.
        case yield
        case shutdown
        /// The store file was deleted, renamed or replaced: this process must not write.
        case storeLost = "store-lost"
        /// `D/writer.lock` was deleted or replaced: another process may hold a lock on the new
        /// file, so this one steps down (as if fenced) and waits again.
        case lockLost = "lock-lost"
        /// Another participant took the lease over (this one had stopped renewing it).
        case fenced
    }

    public enum Action: Sendable, Hashable {
        /// Write the participant's status file.
        case publish
        /// Start waiting for the lease (in the background of the event loop).
        case startAcquiring
        /// Stop waiting for the lease.
        case cancelAcquiring
        /// Fence writes, recover interrupted syncs, restart stopped syncs, run configured syncs.
        case becomeWriter
        /// stop(), wait for isStopped (interrupting past the deadline), checkpoint, release.
        case stopAndRelease(ReleaseReason)
        /// The lease arrived when it was no longer wanted: release it untouched.
        case releaseUnused
        /// Leave the event loop.
        case exit
    }

    public private(set) var phase: Phase = .background
    /// The lease held, from its acquisition (when it was wanted) until its release: set exactly
    /// while the phase is `writer`, `releasing` or `fenced`.
    public private(set) var held: WriterLease.Held?
    /// What the lifecycle signal last said.
    public private(set) var desired: Lifecycle = .background
    public private(set) var shuttingDown = false

    public init() {}

    public mutating func lifecycle(_ lifecycle: Lifecycle) -> [Action] {
        guard !shuttingDown else { return [] }
        desired = lifecycle
        switch (lifecycle, phase) {
        case (.foreground, .background):
            phase = .waitingForLease
            return [.publish, .startAcquiring]
        case (.background, .waitingForLease):
            phase = .background
            return [.cancelAcquiring, .publish]
        case (.background, .writer):
            phase = .releasing
            return [.publish, .stopAndRelease(.background)]
        default:
            // Foreground while waiting/writing, background while background: nothing new.
            // While releasing, `released()` consults `desired`.
            return []
        }
    }

    /// The lease arrived. Unless it is still wanted (`releaseUnused`), it is this machine's.
    public mutating func leaseAcquired(_ held: WriterLease.Held) -> [Action] {
        guard phase == .waitingForLease, !shuttingDown, self.held == nil else { return [.releaseUnused] }
        phase = .writer
        self.held = held
        return [.becomeWriter, .publish]
    }

    /// A participant with a higher priority is foreground and waiting for the lease.
    public mutating func higherPriorityWaiting() -> [Action] {
        guard phase == .writer, !shuttingDown else { return [] }
        phase = .releasing
        return [.publish, .stopAndRelease(.yield)]
    }

    /// The writer can no longer write safely (its store file or its lock file went away): hand
    /// the lease over. It waits for the lease again afterwards if still foreground.
    public mutating func cannotWrite(_ reason: ReleaseReason) -> [Action] {
        guard phase == .writer, !shuttingDown else { return [] }
        phase = .releasing
        return [.publish, .stopAndRelease(reason)]
    }

    /// The held lease was lost: another participant took it over after this one stopped
    /// renewing it (`takenOver`), or its lock file went away. Either way this process may not
    /// write: it stops its syncs and waits for the lease again if still foreground.
    public mutating func leaseLost(takenOver: Bool) -> [Action] {
        switch phase {
        case .writer:
            phase = takenOver ? .fenced : .releasing
            return [.publish, .stopAndRelease(takenOver ? .fenced : .lockLost)]
        case .releasing where takenOver:
            // Already stopping (for the background, a yield, a shutdown): the stop goes on and
            // writes nothing that could land; only the phase says fenced now.
            phase = .fenced
            return [.publish]
        default:
            return []
        }
    }

    /// The lease was released after a `stopAndRelease`.
    public mutating func released() -> [Action] {
        guard phase == .releasing || phase == .fenced else { return [] }
        held = nil
        if shuttingDown {
            phase = .finished
            return [.publish, .exit]
        }
        if desired == .foreground {
            phase = .waitingForLease
            return [.publish, .startAcquiring]
        }
        phase = .background
        return [.publish]
    }

    /// SIGTERM/SIGINT: hand everything back and leave.
    public mutating func shutdown() -> [Action] {
        guard !shuttingDown else { return [] }
        shuttingDown = true
        switch phase {
        case .writer:
            phase = .releasing
            return [.publish, .stopAndRelease(.shutdown)]
        case .releasing, .fenced:
            return []
        case .waitingForLease:
            phase = .finished
            return [.cancelAcquiring, .publish, .exit]
        case .background, .finished:
            phase = .finished
            return [.publish, .exit]
        }
    }
}
