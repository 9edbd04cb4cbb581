import BatonLocking
import Foundation
import Subprocess
import SystemPackage

/// A child process run through swift-subprocess, held open for as long as it runs: its output
/// read as it comes, signals sent through its process descriptor, its exit awaited without
/// blocking a thread.
///
/// Subprocess hands out a running process only inside a closure. This class keeps that closure
/// running (reading the output until the process closes it) in a task of its own, and forwards
/// signals and input into it, so a harness can start a process in one place and stop, freeze or
/// wait for it in another. A signal is sent only while the closure runs, that is before the
/// process is reaped, so it can never reach a later process that reused the pid.
public final class ChildProcess: Sendable {
    /// Where a stream of the child's output goes.
    public enum Sink: Sendable {
        /// Nowhere.
        case discard
        /// Appended to this file (created with mode 0600 if missing).
        case file(String)
        /// Kept in memory: ``stdout`` / ``stderr``, with ``lines`` for stdout.
        case collect
    }

    /// What the child reads on stdin.
    public enum Input: Sendable {
        /// End of file at once.
        case none
        /// This text, then end of file.
        case text(String)
        /// Whatever ``write(_:)`` sends, until ``closeInput()``.
        case interactive
    }

    /// How the child ended.
    public struct Termination: Sendable, Hashable, CustomStringConvertible {
        /// The exit status, or the number of the signal that ended it.
        public var status: Int32
        /// Whether a signal ended it.
        public var signaled: Bool

        public var isSuccess: Bool { status == 0 && !signaled }
        public var description: String {
            guard signaled else { return "exit status \(status)" }
            let names: [Int32: String] = [
                SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
                SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL",
                SIGSEGV: "SIGSEGV",
                SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
            ]
            return "killed by signal \(status)" + (names[status].map { " (\($0))" } ?? "")
        }
    }

    private enum Command: Sendable {
        case signal(Int32, CheckedContinuation<Bool, Never>)
        case write(String)
        case closeInput
    }

    fileprivate struct State {
        var stdout = ""
        var stderr = ""
        /// Set once the output closure ended: no more commands are taken.
        var ended = false
        var termination: Termination?
        var failure: String?
        var waiters: [UUID: AsyncStream<Void>.Continuation] = [:]
    }

    public let pid: pid_t
    public let executable: String
    public let arguments: [String]
    private let state: StateBox
    private let commands: AsyncStream<Command>.Continuation
    private let task: Task<Void, Never>
    /// Complete stdout lines, as they arrive (`.collect` only; one reader).
    public let lines: AsyncStream<String>

    /// Starts `executable` with `arguments`; returns once it runs (or throws if it could not be
    /// started). `environment` is added to this process's own.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        input: Input = .none, stdout: Sink = .discard, stderr: Sink = .discard,
        registry: ChildProcesses? = .shared
    ) async throws -> ChildProcess {
        let (commands, commandInput) = AsyncStream.makeStream(of: Command.self)
        let (lines, lineInput) = AsyncStream.makeStream(of: String.self)
        let state = StateBox()
        let started = Started()
        let configuration = Configuration(
            executable: .path(FilePath(executable)), arguments: Arguments(arguments),
            environment: .inherit.updating(
                Dictionary(
                    uniqueKeysWithValues: environment.map {
                        (Environment.Key(stringLiteral: $0.key), $0.value)
                    })),
            platformOptions: Self.platformOptions(ownGroup: registry?.forwardsInterrupts ?? false))
        let stdoutFile = try Self.open(stdout)
        let stderrFile = try Self.open(stderr)
        let task = Task {
            defer {
                for fd in [stdoutFile, stderrFile] where fd >= 0 { close(fd) }
            }
            do {
                let result = try await Subprocess.run(
                    configuration, input: .inputWriter, output: .sequence, error: .sequence
                ) { execution in
                    started.resolve(.success(execution.processIdentifier.value))
                    // Unstructured tasks, so that cancelling the run (a tear-down) does not cut
                    // them short: the output is read to its end while the child shuts down (a
                    // child writing to a pipe nobody reads would die of SIGPIPE), and every
                    // queued signal gets its answer.
                    let out = Task {
                        await Self.drain(
                            execution.standardOutput, into: stdoutFile, state: state, lines: lineInput
                        ) {
                            $0.stdout += $1
                        }
                    }
                    let err = Task {
                        await Self.drain(execution.standardError, into: stderrFile, state: state, lines: nil)
                        {
                            $0.stderr += $1
                        }
                    }
                    // Input and signals, until the output has ended and the queue is empty.
                    let control = Task {
                        let writer = execution.standardInputWriter
                        var open = true
                        switch input {
                        case .none:
                            _ = try? await writer.finish()
                            open = false
                        case .text(let text):
                            _ = try? await writer.write(text)
                            _ = try? await writer.finish()
                            open = false
                        case .interactive: break
                        }
                        for await command in commands {
                            switch command {
                            case .signal(let number, let reply):
                                do {
                                    try execution.send(signal: Signal(rawValue: number))
                                    reply.resume(returning: true)
                                } catch {
                                    FileHandle.standardError.write(
                                        Data(
                                            "baton: warning: signal \(number) to \(executable): \(error)\n"
                                                .utf8))
                                    reply.resume(returning: false)
                                }
                            case .write(let text) where open:
                                _ = try? await writer.write(text)
                            case .closeInput where open:
                                _ = try? await writer.finish()
                                open = false
                            case .write, .closeInput: break
                            }
                        }
                        if open { _ = try? await writer.finish() }
                    }
                    // Both outputs at end of file: the process has exited (or closed them).
                    await out.value
                    await err.value
                    state.withLock { $0.ended = true }
                    commandInput.finish()
                    await control.value
                }
                let termination: Termination
                switch result.terminationStatus {
                case .exited(let code): termination = Termination(status: code, signaled: false)
                case .signaled(let number): termination = Termination(status: number, signaled: true)
                }
                Self.finish(state, termination: termination, failure: nil)
            } catch {
                started.resolve(.failure(error))
                Self.finish(
                    state, termination: Termination(status: -1, signaled: false),
                    failure: "\(error)")
            }
            lineInput.finish()
        }
        let pid = try await started.value()
        let process = ChildProcess(
            pid: pid, executable: executable, arguments: arguments, state: state, commands: commandInput,
            task: task, lines: lines)
        registry?.add(process)
        return process
    }

    private init(
        pid: pid_t, executable: String, arguments: [String], state: StateBox,
        commands: AsyncStream<Command>.Continuation, task: Task<Void, Never>, lines: AsyncStream<String>
    ) {
        self.pid = pid
        self.executable = executable
        self.arguments = arguments
        self.state = state
        self.commands = commands
        self.task = task
        self.lines = lines
    }

    /// With `ownGroup` (the command forwards interrupts: ``ChildProcesses/forwardsInterrupts``),
    /// the child runs in a process group of its own, so that only this process signals it: job
    /// control aimed at the job that started the command (a shell that exits hangs up its job's
    /// stopped processes) never reaches a child the harness froze. On cancellation
    /// (``tearDown()``): wake a frozen child, ask it to stop, and kill it after 3 s.
    private static func platformOptions(ownGroup: Bool) -> PlatformOptions {
        var options = PlatformOptions()
        if ownGroup { options.processGroupID = 0 }
        options.teardownSequence = [
            .send(signal: .resume, allowedDurationToNextStep: .zero),
            .gracefulShutDown(allowedDurationToNextStep: .seconds(3)),
        ]
        return options
    }

    private static func open(_ sink: Sink) throws -> Int32 {
        guard case .file(let path) = sink else { return -1 }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ChildProcessError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Reads one output stream to its end: into `file`, or into the state (and `lines`).
    private static func drain(
        _ stream: SubprocessOutputSequence, into file: Int32, state: StateBox,
        lines: AsyncStream<String>.Continuation?, append: @Sendable (inout State, String) -> Void
    ) async {
        var pending = ""
        do {
            for try await buffer in stream {
                if file >= 0 {
                    buffer.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let written = Glibc.write(file, bytes.baseAddress! + offset, bytes.count - offset)
                            if written < 0, errno == EINTR { continue }
                            if written <= 0 { break }
                            offset += written
                        }
                    }
                    continue
                }
                let text = buffer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                notify(state) { append(&$0, text) }
                guard let lines else { continue }
                pending += text
                while let newline = pending.firstIndex(of: "\n") {
                    lines.yield(String(pending[..<newline]))
                    pending = String(pending[pending.index(after: newline)...])
                }
            }
        } catch {
            // The stream was cut short (the process ended under it): what was read stands.
        }
        if let lines, !pending.isEmpty { lines.yield(pending) }
    }

    private static func notify(_ state: StateBox, _ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            change(&state)
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.yield() }
    }

    private static func finish(_ state: StateBox, termination: Termination, failure: String?) {
        notify(state) {
            $0.ended = true
            $0.termination = termination
            $0.failure = failure
        }
    }

    // MARK: - Using it

    /// Whether it has not been seen to exit yet.
    public var isRunning: Bool { state.withLock { $0.termination == nil } }
    /// How it ended, once it has.
    public var termination: Termination? { state.withLock { $0.termination } }
    /// Everything it wrote to stdout so far (`.collect`).
    public var stdout: String { state.withLock { $0.stdout } }
    /// Everything it wrote to stderr so far (`.collect`).
    public var stderr: String { state.withLock { $0.stderr } }

    /// Sends `signal` (SIGSTOP, SIGCONT, SIGTERM, SIGKILL…); false once the process has ended.
    @discardableResult
    public func send(_ signal: Int32) async -> Bool {
        await withCheckedContinuation { reply in
            let queued = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                commands.yield(.signal(signal, reply))
                return true
            }
            if !queued { reply.resume(returning: false) }
        }
    }

    /// Writes `text` on its stdin (`.interactive`).
    public func write(_ text: String) {
        state.withLock { if !$0.ended { commands.yield(.write(text)) } }
    }

    /// Ends its stdin (`.interactive`).
    public func closeInput() {
        state.withLock { if !$0.ended { commands.yield(.closeInput) } }
    }

    /// Waits for it to exit.
    @discardableResult
    public func wait() async -> Termination {
        await task.value
        ChildProcesses.shared.remove(self)
        return state.withLock { $0.termination ?? Termination(status: -1, signaled: false) }
    }

    /// Waits until `condition` holds for (stdout, stderr), re-checked at each output and at the
    /// exit; false if the process exits with it still false, or after `timeout`.
    public func waitForOutput(
        timeout: Duration, _ condition: @escaping @Sendable (String, String) -> Bool
    ) async -> Bool {
        let id = UUID()
        let (changes, continuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.waiters[id] = continuation }
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: id) } }
        continuation.yield()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in changes {
                    // Ended is read first: once it holds every byte is in, so a condition still
                    // false after it is false for good.
                    let (ended, out, err) = self.state.withLock {
                        ($0.termination != nil, $0.stdout, $0.stderr)
                    }
                    if condition(out, err) { return true }
                    if ended { return false }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)  // wait-ok: the upper bound of an event wait
                return false
            }
            let met = await group.next() ?? false
            group.cancelAll()
            continuation.finish()
            return met
        }
    }

    /// Cancels the run: SIGCONT, SIGTERM, and SIGKILL 3 s later if it is still there; returns
    /// once it has exited.
    public func tearDown() async {
        task.cancel()
        await wait()
    }

    /// Why it could not be started or watched, if so.
    public var failure: String? { state.withLock { $0.failure } }
}

/// The state a child's run task and its users share.
private final class StateBox: Sendable {
    private let mutex = Locked(ChildProcess.State())

    func withLock<T>(_ body: (inout ChildProcess.State) -> T) -> T {
        mutex.withLock { body(&$0) }
    }
}

/// A child that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
}

/// The pid from inside the run closure, or the error that kept it from starting.
private final class Started: Sendable {
    private let state = Locked<
        (result: Result<pid_t, any Error>?, waiter: CheckedContinuation<pid_t, any Error>?)
    >(
        (nil, nil))

    func resolve(_ result: Result<pid_t, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<pid_t, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> pid_t {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<pid_t, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

extension ChildProcess {
    /// Wakes it (SIGCONT) and asks it to stop (SIGTERM: a participant releases everything), then
    /// waits for it to exit.
    @discardableResult
    public func terminate() async -> Termination {
        await send(SIGCONT)
        await send(SIGTERM)
        return await wait()
    }
}
