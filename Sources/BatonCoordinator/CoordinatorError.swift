/// Why a coordinator operation failed, with what to do next.
public struct CoordinatorError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case invalidName = "invalid_name"
        case leaseTimeout = "lease_timeout"
        /// Another live process already runs a participant of that name.
        case nameInUse = "name_in_use"
        case watchFailed = "watch_failed"
        /// A local edit asked for while this participant does not hold the writer lease.
        case notWriter = "not_writer"
        /// The lease was lost (taken over, or its lock file went away) while a local edit ran:
        /// the edit rolled back.
        case leaseLost = "lease_lost"
        case io
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
