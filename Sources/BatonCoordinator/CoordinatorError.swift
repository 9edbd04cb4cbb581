/// Why a coordinator operation failed, with what to do next.
public struct CoordinatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is; stable for scripts and tests.
    public enum Code: String, Sendable, Hashable {
        /// A participant name is not 1-64 of A-Z a-z 0-9 . _ - or starts with '.'.
        case invalidName = "invalid_name"
        /// The writer lease was not free before the deadline.
        case leaseTimeout = "lease_timeout"
        /// Another live process already runs a participant of that name.
        case nameInUse = "name_in_use"
        /// The directory could not be watched (inotify unavailable, or the root not watchable).
        case watchFailed = "watch_failed"
        /// A local edit asked for while this participant does not hold the writer lease.
        case notWriter = "not_writer"
        /// The lease was lost (taken over, or its lock file went away) while a local edit ran:
        /// the edit rolled back.
        case leaseLost = "lease_lost"
        /// A file in the shared directory could not be opened or written (or ``Participant/run()``
        /// was called twice).
        case io
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence: what happened and what to do next.
    public var message: String

    /// Makes an error of kind `code` with `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
