import BatonCoordinator
import Foundation
import Testing

@testable import BatonHarness

/// The process layer itself, on /bin/sh and cat.
@Suite("child processes through swift-subprocess", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test("output is collected as it comes, each stream apart, and the exit status is kept")
    func output() async throws {
        let child = try await ChildProcess.start(
            "/bin/sh", ["-c", "echo one; echo two >&2; echo three; exit 3"], stdout: .collect,
            stderr: .collect,
            registry: nil)
        var lines: [String] = []
        for await line in child.lines { lines.append(line) }
        let termination = await child.wait()
        #expect(lines == ["one", "three"])
        #expect(child.stderr == "two\n")
        #expect(termination == .init(status: 3, signaled: false))
        #expect(!termination.isSuccess)
        #expect(!child.isRunning)
    }

    @Test("stdin: given whole, or typed line by line and closed")
    func input() async throws {
        let whole = try await ChildProcess.start(
            "/bin/cat", [], input: .text("a\nb\n"), stdout: .collect, registry: nil)
        #expect(await whole.wait().isSuccess)
        #expect(whole.stdout == "a\nb\n")

        let typed = try await ChildProcess.start(
            "/bin/cat", [], input: .interactive, stdout: .collect, registry: nil)
        typed.write("first\n")
        #expect(await typed.waitForOutput(timeout: .seconds(30)) { out, _ in out == "first\n" })
        typed.write("second\n")
        typed.closeInput()
        #expect(await typed.wait().isSuccess)
        #expect(typed.stdout == "first\nsecond\n")
    }

    @Test("signals: SIGSTOP freezes it, SIGCONT wakes it, SIGKILL ends it; none is sent once it ended")
    func signals() async throws {
        let child = try await ChildProcess.start(
            "/bin/sh", ["-c", "echo up; while read line; do echo \"got $line\"; done"], input: .interactive,
            stdout: .collect, registry: nil)
        #expect(await child.waitForOutput(timeout: .seconds(30)) { out, _ in out == "up\n" })
        #expect(await child.send(SIGSTOP))
        // The kernel stops another process asynchronously: look at /proc until it shows.
        for _ in 0..<1000 where ProcessState.of(child.pid) != .stopped {
            try await Task.sleep(for: .milliseconds(5))  // wait-ok: polling /proc, bounded
        }
        #expect(ProcessState.of(child.pid) == .stopped)
        #expect(await child.send(SIGCONT))
        child.write("x\n")
        #expect(await child.waitForOutput(timeout: .seconds(30)) { out, _ in out.hasSuffix("got x\n") })
        #expect(await child.send(SIGKILL))
        #expect(await child.wait() == .init(status: SIGKILL, signaled: true))
        #expect(await child.send(SIGTERM) == false)
    }

    @Test(
        "a command that forwards interrupts starts each child in a process group of its own (a hang-up of the job that started the command cannot reach a participant it froze); one that does not (a test runner) keeps them in its own, for Ctrl-C"
    )
    func processGroups() async throws {
        let forwarding = ChildProcesses()
        forwarding.forwardsInterrupts = true
        for registry in [forwarding, nil] {
            let child = try await ChildProcess.start(
                "/bin/sh", ["-c", "echo up; read line; exit 0"], input: .interactive, stdout: .collect,
                registry: registry)
            #expect(await child.waitForOutput(timeout: .seconds(30)) { out, _ in out == "up\n" })
            #expect(getpgid(child.pid) == (registry == nil ? getpgrp() : child.pid))
            child.closeInput()
            #expect(await child.wait().isSuccess)
            registry?.remove(child)
        }
    }

    @Test("how a child ended names the signal")
    func terminationNamesSignal() {
        #expect(
            "\(ChildProcess.Termination(status: SIGHUP, signaled: true))" == "killed by signal 1 (SIGHUP)")
        #expect("\(ChildProcess.Termination(status: 64, signaled: true))" == "killed by signal 64")
        #expect("\(ChildProcess.Termination(status: 3, signaled: false))" == "exit status 3")
    }

    @Test("a wait for output that cannot come ends when the process exits, not at its bound")
    func waitEndsAtExit() async throws {
        let child = try await ChildProcess.start(
            "/bin/sh", ["-c", "echo bye"], stdout: .collect, registry: nil)
        let met = await child.waitForOutput(timeout: .seconds(600)) { out, _ in out.contains("never") }
        #expect(!met)
        #expect(child.stdout == "bye\n")
    }

    @Test("output to a file is appended across runs")
    func fileOutput() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/child-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: path) }
        for word in ["one", "two"] {
            let child = try await ChildProcess.start(
                "/bin/sh", ["-c", "echo \(word); echo err-\(word) >&2"], stdout: .file(path),
                stderr: .file(path),
                registry: nil)
            await child.wait()
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").sorted() == ["err-one", "err-two", "one", "two"])
    }

    @Test("tear-down wakes a frozen child and stops it with SIGTERM (its trap exits 0, no SIGKILL)")
    func tearDown() async throws {
        // wait-ok: the child's own idle loop
        let script = "trap 'echo term; exit 0' TERM; echo up; while :; do sleep 0.05; done"
        let child = try await ChildProcess.start("/bin/sh", ["-c", script], stdout: .collect, registry: nil)
        #expect(await child.waitForOutput(timeout: .seconds(30)) { out, _ in out == "up\n" })
        await child.send(SIGSTOP)
        await child.tearDown()
        #expect(!child.isRunning)
        #expect(child.termination == .init(status: 0, signaled: false))
    }

    @Test("a missing executable is an error, not a hang")
    func missing() async {
        await #expect(throws: (any Error).self) {
            _ = try await ChildProcess.start("/nonexistent/baton", [], registry: nil)
        }
    }
}
