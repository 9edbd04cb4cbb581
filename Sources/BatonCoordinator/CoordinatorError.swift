/// Why a coordinator operation failed, with what to do next.
public struct CoordinatorError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case invalidName = "invalid_name"
        case leaseTimeout = "lease_timeout"
        /// Another live process already runs a participant of that name.
        case nameInUse = "name_in_use"
        case watchFailed = "watch_failed"
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
