/// A failure a command reports as one line (`baton: error: message`) and an exit code.
public struct CLIError: Error, CustomStringConvertible {
    public var message: String
    public var exitCode: Int32

    public init(message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }
}
