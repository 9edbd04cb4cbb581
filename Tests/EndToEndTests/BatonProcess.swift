import Foundation
import Synchronization

/// The built `baton` binary, run as a user would run it.
enum BatonBinary {
    /// `BATON_BIN`, else `baton` beside the test bundle in the build directory.
    static var path: String {
        if let override = ProcessInfo.processInfo.environment["BATON_BIN"] { return override }
        var url = Bundle.main.bundleURL
        while url.pathComponents.count > 1 {
            let candidate = url.appendingPathComponent("baton").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            url.deleteLastPathComponent()
        }
        return ".build/debug/baton"
    }
}

/// What a finished process left behind.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var signaled: Bool
}

struct SetupFailed: Error {
    var what: String
}

struct ProcessTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Output collected so far, and whether each pipe has reached end of file.
struct Output: Sendable {
    var stdout = ""
    var stderr = ""
    var stdoutClosed = false
    var stderrClosed = false
    var terminated = false
}

/// The collected output, shared with the pipe handlers.
final class OutputBox: Sendable {
    private let state = Mutex(Output())

    func withLock<T>(_ body: (inout Output) -> T) -> T {
        state.withLock { body(&$0) }
    }
}

/// A running `baton` process with its output collected as it arrives.
final class BatonProcess: Sendable {
    private let process: Process
    private let output = OutputBox()
    private let changes: AsyncStream<Void>
    private let notify: AsyncStream<Void>.Continuation
    let arguments: [String]
    /// With `interactive`, our write end of the process's stdin (a FIFO), `O_CLOEXEC` so no other
    /// child inherits it: closing it is the process's end of file.
    private let input = Mutex<Int32>(-1)

    /// A test that fails (throws) mid-way never leaves its processes running: they would spin in
    /// a deleted directory and slow every later test down.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        closeInput()
    }

    /// Starts `executable` (the built `baton` when nil) with `arguments`.
    ///
    /// - Parameters:
    ///   - stdin: the whole input, given at once.
    ///   - interactive: input typed line by line with ``type(_:)``, ended by ``closeInput()``.
    init(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
        executable: String? = nil, interactive: Bool = false
    ) throws {
        self.arguments = arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable ?? BatonBinary.path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let stdoutPipe = Pipe()
        let stderrPipe = Pipe()
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        // Input comes from a file, not a pipe: a pipe's write end can leak into processes that
        // other tests spawn at the same moment, and then the reader never sees end of file.
        if interactive {
            let fifo = FileManager.default.temporaryDirectory.path + "/baton-stdin-" + UUID().uuidString
            guard mkfifo(fifo, 0o600) == 0 else { throw SetupFailed(what: "mkfifo \(fifo): errno \(errno)") }
            // Opened read-write first, so opening the read end does not block.
            let writer = open(fifo, O_RDWR | O_CLOEXEC)
            process.standardInput = FileHandle(forReadingAtPath: fifo)
            unlink(fifo)
            input.withLock { $0 = writer }
        } else if let stdin {
            let inputPath = FileManager.default.temporaryDirectory.path + "/baton-stdin-" + UUID().uuidString
            _ = FileManager.default.createFile(atPath: inputPath, contents: Data(stdin.utf8))
            process.standardInput = FileHandle(forReadingAtPath: inputPath)
            unlink(inputPath)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        (changes, notify) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.process = process
        let output = self.output
        let notify = self.notify
        // One thread per pipe doing blocking reads until end of file: Foundation's
        // readabilityHandler can miss the end of file on Linux.
        Self.drain(
            stdoutPipe.fileHandleForReading.fileDescriptor, output: output, notify: notify, isStdout: true)
        Self.drain(
            stderrPipe.fileHandleForReading.fileDescriptor, output: output, notify: notify, isStdout: false)
        process.terminationHandler = { _ in
            output.withLock { $0.terminated = true }
            notify.yield()
        }
        try process.run()
    }

    private static func drain(
        _ fd: Int32, output: OutputBox, notify: AsyncStream<Void>.Continuation, isStdout: Bool
    ) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                let text = String(decoding: buffer[0..<count], as: UTF8.self)
                output.withLock { isStdout ? ($0.stdout += text) : ($0.stderr += text) }
                notify.yield()
            }
            output.withLock { isStdout ? ($0.stdoutClosed = true) : ($0.stderrClosed = true) }
            notify.yield()
        }
        thread.start()
    }

    /// Types `line` (and a newline) on an interactive process's stdin.
    func type(_ line: String) {
        input.withLock { fd in
            guard fd >= 0 else { return }
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// Ends an interactive process's stdin.
    func closeInput() {
        input.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { output.withLock { $0.stdout } }
    var stderr: String { output.withLock { $0.stderr } }
    var isRunning: Bool { process.isRunning }

    /// Sends a signal (SIGKILL, SIGTERM, SIGSTOP…).
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until `condition` holds for the output, or fails after `timeout`.
    func waitForOutput(
        _ what: String, timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable (String, String) -> Bool
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in self.changes {
                    // Finished is read first: once it holds, every byte is in, so a condition
                    // still false after it is false for good (read the other way round, an exit
                    // landing between the two reads failed a wait for that very exit).
                    let finished = self.isFinished
                    let (out, err) = self.output.withLock { ($0.stdout, $0.stderr) }
                    if condition(out, err) { return }
                    if finished {
                        throw ProcessTimeout(what: "\(what) (process exited; stderr: \(err.suffix(500)))")
                    }
                }
            }
            group.addTask {
                // The bound of a wait that is driven by output events; it only fires on a hang.
                try await Task.sleep(for: timeout)  // wait-ok: upper bound of an event wait
                let state = self.output.withLock {
                    "terminated=\($0.terminated) stdoutEOF=\($0.stdoutClosed) stderrEOF=\($0.stderrClosed) running=\(self.process.isRunning)"
                }
                throw ProcessTimeout(what: "\(what) [\(state)]")
            }
            // Kick the first check in case the output is already there.
            notify.yield()
            try await group.next()
            group.cancelAll()
        }
    }

    /// Waits for a line on stdout containing `text`.
    func waitForLine(containing text: String, timeout: Duration = .seconds(60)) async throws {
        try await waitForOutput("a line containing '\(text)'", timeout: timeout) { out, _ in
            out.contains(text)
        }
    }

    /// Exited, and both pipes read to end of file.
    var isFinished: Bool {
        output.withLock { $0.terminated && $0.stdoutClosed && $0.stderrClosed }
    }

    /// Waits for exit; kills the process and throws if it takes longer than `timeout`.
    func wait(timeout: Duration = .seconds(120)) async throws -> ProcessResult {
        do {
            try await waitForOutput("exit of baton \(arguments.joined(separator: " "))", timeout: timeout) {
                _, _ in
                self.isFinished
            }
        } catch {
            send(SIGKILL)
            throw error
        }
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus, stdout: stdout, stderr: stderr,
            signaled: process.terminationReason == .uncaughtSignal)
    }

    /// Runs `baton args` to completion.
    static func run(
        _ arguments: [String], stdin: String? = nil, timeout: Duration = .seconds(120)
    ) async throws -> ProcessResult {
        try await BatonProcess(arguments, stdin: stdin).wait(timeout: timeout)
    }
}
