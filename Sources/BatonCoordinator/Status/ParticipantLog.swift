import BatonStore
import Foundation
import Synchronization

/// Appends JSON lines to `D/logs/<name>.jsonl`: lease, lifecycle, manager-state and sync events,
/// each with `t` (CLOCK_MONOTONIC milliseconds, comparable across processes on one machine) and
/// `wall` (ms since 1970). Never tokens or record contents.
public final class ParticipantLog: Sendable {
    /// Writes bytes to a descriptor, as `write(2)` does (replaceable to test short writes).
    package typealias Writer = @Sendable (Int32, UnsafeRawPointer?, Int) -> Int

    private let fd: Int32
    private let writer: Writer
    /// Whether the last line may have been left torn (its write failed part-way): the next line
    /// then starts with a newline of its own.
    private let torn = Mutex(false)

    /// Opens `D/logs/<name>.jsonl` for appending, creating `D/logs` and the file (mode 0600) when
    /// missing.
    ///
    /// - Throws: `io` when the log cannot be opened.
    public convenience init(directory: SharedDirectory, name: String) throws {
        try self.init(directory: directory, name: name, writer: { write($0, $1, $2) })
    }

    package init(directory: SharedDirectory, name: String, writer: @escaping Writer) throws {
        try directory.ensureSubdirectory(directory.logsPath)
        let path = directory.logsPath + "/\(name).jsonl"
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw CoordinatorError(.io, "cannot open log \(path): \(String(cString: strerror(errno)))")
        }
        self.writer = writer
    }

    deinit { close(fd) }

    /// Appends one event; a line is written with one `write`, so lines never interleave.
    ///
    /// A write can fail part-way (a full disk). Then the next line starts with a newline, so the
    /// torn piece stays a line of its own, which readers skip as not JSON, and is never glued to
    /// the next event.
    public func log(_ event: String, _ fields: JSONObject = [:]) {
        var object = fields
        object["event"] = .string(event)
        object["t"] = .double((MonotonicClock.millis() * 1000).rounded() / 1000)
        object["wall"] = .int(WallClock.nowMillis())
        let line = JSONValue.object(object).jsonString + "\n"
        torn.withLock { torn in
            let bytes = Array((torn ? "\n" + line : line).utf8)
            let written = bytes.withUnsafeBytes { writer(fd, $0.baseAddress, $0.count) }
            if written == bytes.count {
                torn = false
            } else if written > 0 {
                torn = true
            }
        }
    }
}
