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

/// Why a writer hands the lease over.
public enum ReleaseReason: String, Sendable, Hashable {
    /// Its lifecycle signal turned to background.
    case background
    /// A higher-priority participant is foreground and waiting.
    case yield
    /// The participant is shutting down.
    case shutdown
    /// The store file was deleted, renamed or replaced: this process must not write.
    case storeLost = "store-lost"
    /// `D/writer.lock` was deleted or replaced: another process may hold a lock on the new
    /// file, so this one steps down (as if fenced) and waits again.
    case lockLost = "lock-lost"
    /// Another participant took the lease over (this one had stopped renewing it), or the
    /// holding's first write found the store's epoch moved past it.
    case fenced
}
