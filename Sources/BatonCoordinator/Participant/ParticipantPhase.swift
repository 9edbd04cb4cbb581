/// Where a participant is with respect to the writer lease, as its status publishes it.
public enum ParticipantPhase: String, Sendable, Hashable, Codable {
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
