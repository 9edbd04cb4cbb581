import BatonLocking
import BatonStore
import Foundation

/// Appends JSON lines to `D/logs/<name>.jsonl`: lease, lifecycle, manager-state and sync events,
/// each with `t` (CLOCK_MONOTONIC milliseconds, comparable across processes on one machine) and
/// `wall` (ms since 1970). Never tokens or record contents.
///
/// The log rotates at ``limit`` bytes: before a line would take the file past it, the file is
/// renamed to `<name>.jsonl.1` (replacing the one rotated before, so one old file is kept) and a
/// new `<name>.jsonl` is started. A rename is atomic, a line is never split across the two
/// files, and a rotation that fails (the rename, or opening the new file) loses nothing: the
/// line goes to the file it would have ended, and the rotation is tried again at the next line.
/// A participant's logs so take at most twice the limit (a single line longer than the limit
/// gets a file of its own). ``ParticipantLogReader`` reads both files.
public final class ParticipantLog: Sendable {
    /// Writes bytes to a descriptor, as `write(2)` does (replaceable to test short writes).
    package typealias Writer = @Sendable (Int32, UnsafeRawPointer?, Int) -> Int

    /// The file operations a log makes, replaceable to test failures.
    package struct FileOperations: Sendable {
        /// As `write(2)`.
        package var write: Writer
        /// As `rename(2)`: 0 on success.
        package var rename: @Sendable (String, String) -> Int32
        /// Opens the path for appending, creating it (mode 0600); a descriptor, or -1.
        package var open: @Sendable (String) -> Int32

        /// The system's own, following no symbolic link in `directory`.
        package static func system(in directory: SharedDirectory) -> FileOperations {
            FileOperations(
                write: { Glibc.write($0, $1, $2) }, rename: { directory.renameFile($0, to: $1) },
                open: { directory.openFile($0, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600) })
        }
    }

    /// The size at which a log rotates when none is given: 8 MiB.
    public static let defaultLimit: Int64 = 8 << 20
    /// The smallest limit a log accepts (a smaller one is raised to it).
    public static let minimumLimit: Int64 = 1024

    /// The log's path, `D/logs/<name>.jsonl`.
    public let path: String
    /// The path the log is rotated to, `D/logs/<name>.jsonl.1`.
    public var rotatedPath: String { path + ".1" }
    /// The size in bytes the log's file never passes by a line (unless that line alone does).
    public let limit: Int64

    private struct State {
        /// The file lines go to.
        var fd: Int32
        /// Its size, as far as this log wrote it.
        var size: Int64
        /// Whether the last line may have been left torn (its write failed part-way): the next
        /// line in the same file then starts with a newline of its own.
        var torn = false
    }

    private let operations: FileOperations
    private let state: Locked<State>

    /// Opens `D/logs/<name>.jsonl` for appending, creating `D/logs` and the file (mode 0600) when
    /// missing.
    ///
    /// - Parameter limit: the size at which the log rotates (at least ``minimumLimit``).
    /// - Throws: `io` when the log cannot be opened.
    public convenience init(directory: SharedDirectory, name: String, limit: Int64 = defaultLimit) throws {
        try self.init(directory: directory, name: name, limit: limit, operations: .system(in: directory))
    }

    package convenience init(directory: SharedDirectory, name: String, writer: @escaping Writer) throws {
        var operations = FileOperations.system(in: directory)
        operations.write = writer
        try self.init(directory: directory, name: name, operations: operations)
    }

    package init(
        directory: SharedDirectory, name: String, limit: Int64 = defaultLimit, operations: FileOperations
    ) throws {
        try directory.ensureSubdirectory(directory.logsPath)
        path = directory.logsPath + "/\(name).jsonl"
        self.limit = max(limit, Self.minimumLimit)
        self.operations = operations
        let fd = operations.open(path)
        guard fd >= 0 else {
            throw CoordinatorError(
                .io, "cannot open log \(SharedDirectory.describeOpenFailure(path, errno: errno))")
        }
        state = Locked(State(fd: fd, size: Self.size(of: fd)))
    }

    deinit { _ = state.withLock { close($0.fd) } }

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
        state.withLock { state in
            let length = Int64(line.utf8.count + (state.torn ? 1 : 0))
            if state.size > 0, state.size + length > limit { rotate(&state) }
            let bytes = Array((state.torn ? "\n" + line : line).utf8)
            let written = bytes.withUnsafeBytes { operations.write(state.fd, $0.baseAddress, $0.count) }
            if written > 0 { state.size += Int64(written) }
            if written == bytes.count {
                state.torn = false
            } else if written > 0 {
                state.torn = true
            }
        }
    }

    /// Moves the full file aside and starts a new one. Each step moves the state only once it
    /// succeeded: until the new file is open, lines go on to the old one (renamed or not).
    private func rotate(_ state: inout State) {
        // Only the file this log writes is renamed: a path that names another file (or none,
        // after a rename whose new file could not be opened) is left as it is.
        if Self.identity(ofPath: path) == Self.identity(of: state.fd) {
            guard operations.rename(path, rotatedPath) == 0 else { return }
        }
        let fd = operations.open(path)
        guard fd >= 0 else { return }
        close(state.fd)
        state = State(fd: fd, size: Self.size(of: fd))
    }

    private static func size(of fd: Int32) -> Int64 {
        var status = stat()
        return fstat(fd, &status) == 0 ? Int64(status.st_size) : 0
    }

    private static func identity(of fd: Int32) -> [UInt64]? {
        var status = stat()
        return fstat(fd, &status) == 0 ? [UInt64(status.st_dev), UInt64(status.st_ino)] : nil
    }

    private static func identity(ofPath path: String) -> [UInt64]? {
        var status = stat()
        return lstat(path, &status) == 0 ? [UInt64(status.st_dev), UInt64(status.st_ino)] : nil
    }
}
