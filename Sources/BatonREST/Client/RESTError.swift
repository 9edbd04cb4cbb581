/// A failed call to the REST API. Never carries the token or record contents.
public struct RESTError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The server answered with an error status and a Salesforce error array.
        case server(status: Int, errorCode: String)
        /// The connection failed or was dropped before a complete response.
        case transport
        /// No complete response within the timeout.
        case timeout
        /// The calling task was cancelled (for example by a stop).
        case cancelled
        /// The response was not the JSON the API promises.
        case malformedResponse
    }

    public var kind: Kind
    /// What happened, and for server errors the server's message.
    public var message: String
    /// A connection that could not be made and will not be made a moment later either (no
    /// answer within the connect timeout, a name that does not resolve, a failed TLS handshake):
    /// not retried by the call, so a sync against such a server fails within one connect
    /// timeout and the caller's own backoff takes over.
    public var unreachableForNow: Bool

    public init(_ kind: Kind, _ message: String, unreachableForNow: Bool = false) {
        self.kind = kind
        self.message = message
        self.unreachableForNow = unreachableForNow
    }

    /// The HTTP status, for server errors.
    public var status: Int? {
        if case .server(let status, _) = kind { return status }
        return nil
    }

    /// The Salesforce error code (`NOT_FOUND`, `MALFORMED_QUERY`…), for server errors.
    public var errorCode: String? {
        if case .server(_, let code) = kind { return code }
        return nil
    }

    /// Worth retrying on an idempotent call: connection trouble and 5xx.
    var isRetryable: Bool {
        switch kind {
        case .transport: return !unreachableForNow
        case .timeout: return true
        case .server(let status, _): return status >= 500
        case .cancelled, .malformedResponse: return false
        }
    }

    public var description: String {
        switch kind {
        case .server(let status, let code): return "HTTP \(status) \(code): \(message)"
        default: return message
        }
    }
}
