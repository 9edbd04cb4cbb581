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
