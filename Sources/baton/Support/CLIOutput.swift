import BatonStore
import Foundation

/// A failure the CLI reports as one line and an exit code.
struct CLIError: Error {
    var message: String
    var exitCode: Int32 = 1
}

/// Where the CLI's output goes; libraries never print.
enum CLIOutput {
    /// Prints one line to stdout and flushes, so a reader on a pipe sees it at once.
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Prints a JSON value as one line.
    static func json(_ value: JSONValue) {
        line(value.jsonString)
    }

    /// Prints `baton: error: message` to stderr and exits.
    static func fail(_ message: String, code: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("baton: error: \(message)\n".utf8))
        exit(code)
    }

    /// Prints a warning line to stderr.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("baton: warning: \(message)\n".utf8))
    }
}
