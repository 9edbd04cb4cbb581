import BatonHarness
import Foundation

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

/// A running `baton` process (through swift-subprocess, ``ChildProcess``) with its output
/// collected as it arrives.
final class BatonProcess: Sendable {
    private let process: ChildProcess
    let arguments: [String]

    /// Starts `executable` (the built `baton` when nil) with `arguments`.
    ///
    /// - Parameters:
    ///   - stdin: the whole input, given at once.
    ///   - interactive: input typed line by line with ``type(_:)``, ended by ``closeInput()``.
    init(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
        executable: String? = nil, interactive: Bool = false
    ) async throws {
        self.arguments = arguments
        let input: ChildProcess.Input = interactive ? .interactive : stdin.map { .text($0) } ?? .none
        process = try await ChildProcess.start(
            executable ?? BatonBinary.path, arguments, environment: environment, input: input,
            stdout: .collect, stderr: .collect)
    }

    /// A test that fails (throws) mid-way never leaves its processes running: they would spin in
    /// a deleted directory and slow every later test down.
    deinit {
        let process = self.process
        if process.isRunning { Task { await process.send(SIGKILL) } }
    }

    /// Types `line` (and a newline) on an interactive process's stdin.
    func type(_ line: String) { process.write(line + "\n") }

    /// Ends an interactive process's stdin.
    func closeInput() { process.closeInput() }

    var pid: Int32 { process.pid }
    var stdout: String { process.stdout }
    var stderr: String { process.stderr }
    var isRunning: Bool { process.isRunning }
    /// Exited, and its output read to the end.
    var isFinished: Bool { !process.isRunning }

    /// Sends a signal (SIGKILL, SIGTERM, SIGSTOP…).
    func send(_ signal: Int32) async {
        await process.send(signal)
    }

    /// Waits until `condition` holds for the output, or fails after `timeout`.
    func waitForOutput(
        _ what: String, timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable (String, String) -> Bool
    ) async throws {
        guard await process.waitForOutput(timeout: timeout, condition) else {
            let state =
                process.isRunning ? "still running" : "exited, \(process.termination?.description ?? "?")"
            throw ProcessTimeout(what: "\(what) [\(state); stderr: \(stderr.suffix(500))]")
        }
    }

    /// Waits for a line on stdout containing `text`.
    func waitForLine(containing text: String, timeout: Duration = .seconds(60)) async throws {
        try await waitForOutput("a line containing '\(text)'", timeout: timeout) { out, _ in
            out.contains(text)
        }
    }

    /// Waits for exit; kills the process and throws if it takes longer than `timeout`.
    func wait(timeout: Duration = .seconds(120)) async throws -> ProcessResult {
        guard await process.waitForOutput(timeout: timeout, { _, _ in false }) || !process.isRunning else {
            await process.send(SIGKILL)
            throw ProcessTimeout(what: "exit of baton \(arguments.joined(separator: " "))")
        }
        let termination = await process.wait()
        return ProcessResult(
            status: termination.status, stdout: stdout, stderr: stderr, signaled: termination.signaled)
    }

    /// Runs `baton args` to completion.
    static func run(
        _ arguments: [String], stdin: String? = nil, timeout: Duration = .seconds(120)
    ) async throws -> ProcessResult {
        try await BatonProcess(arguments, stdin: stdin).wait(timeout: timeout)
    }
}

extension BatonProcess {
    /// Sends `signal` without waiting (for a `defer`, which cannot await).
    func sendDetached(_ signal: Int32) {
        Task { await self.send(signal) }
    }
}
