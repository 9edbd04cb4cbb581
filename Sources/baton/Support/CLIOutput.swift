import BatonStore
import Foundation

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

    /// Prints a value's JSON form as one line (object keys sorted).
    static func json(_ value: some Encodable) throws {
        line(try JSONValue(encoding: value).jsonString)
    }

    /// Prints `baton: error: message` to stderr and exits.
    static func fail(_ message: String, code: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("baton: error: \(message)\n".utf8))
        exit(code)
    }

    /// Prints one line to stderr as it is (progress beside a JSON result on stdout).
    static func stderrLine(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Prints a warning line to stderr.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("baton: warning: \(message)\n".utf8))
    }
}
