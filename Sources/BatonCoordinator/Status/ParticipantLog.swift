import BatonStore
import Foundation
import Synchronization

/// Appends JSON lines to `D/logs/<name>.jsonl`: lease, lifecycle, manager-state and sync events,
/// each with `t` (CLOCK_MONOTONIC milliseconds, comparable across processes on one machine) and
/// `wall` (ms since 1970). Never tokens or record contents.
public final class ParticipantLog: Sendable {
    private let fd: Int32
    private let lock = Mutex(())

    public init(directory: SharedDirectory, name: String) throws {
        try directory.ensureSubdirectory(directory.logsPath)
        let path = directory.logsPath + "/\(name).jsonl"
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw CoordinatorError(.io, "cannot open log \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Monotonic milliseconds (CLOCK_MONOTONIC).
    public static func monotonicMillis() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1_000_000
    }

    /// Appends one event; a line is written with one `write`, so lines never interleave.
    public func log(_ event: String, _ fields: JSONObject = [:]) {
        var object = fields
        object["event"] = .string(event)
        object["t"] = .double((Self.monotonicMillis() * 1000).rounded() / 1000)
        object["wall"] = .int(Clock.nowMillis())
        let line = Data((JSONValue.object(object).jsonString + "\n").utf8)
        lock.withLock { _ in
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }
}
