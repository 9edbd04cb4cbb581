/// A query that is not in the supported SOQL subset: names the position and the token.
public struct SOQLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Character offset (from 0) of the offending token.
    public var position: Int
    /// The offending token as written, or `end of query`.
    public var token: String
    /// What was expected.
    public var message: String

    public init(position: Int, token: String, message: String) {
        self.position = position
        self.token = token
        self.message = message
    }

    public var description: String { "\(message) at position \(position) near '\(token)'" }
}
