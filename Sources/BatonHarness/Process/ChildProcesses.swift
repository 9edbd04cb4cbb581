import BatonLocking
import Foundation

/// The child processes a command started (the demo's participants, a chaos run's, the bench's
/// workers), so that an interrupted command (SIGINT, SIGTERM, SIGHUP) takes them down with it instead of
/// leaving orphans.
public final class ChildProcesses: Sendable {
    public static let shared = ChildProcesses()

    private let running = Locked<[ObjectIdentifier: ChildProcess]>([:])
    private let forwarding = Locked(false)

    /// Whether this command forwards a terminal's Ctrl-C and hang-up to its children
    /// (``exitOnInterrupt()``): its children then start in process groups of their own, out of
    /// reach of job control aimed at the job that started the command (a shell that exits hangs
    /// up its job's stopped processes, which would kill a participant the harness froze). Without
    /// it (a test runner) they stay in this process's group, so a Ctrl-C still reaches them.
    var forwardsInterrupts: Bool {
        get { forwarding.withLock { $0 } }
        set { forwarding.withLock { $0 = newValue } }
    }
    private let temporaryPaths = Locked<[String]>([])

    /// This executable, to start children with (the same build as the running command).
    public static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    }

    func add(_ process: ChildProcess) {
        running.withLock { $0[ObjectIdentifier(process)] = process }
    }

    func remove(_ process: ChildProcess) {
        _ = running.withLock { $0.removeValue(forKey: ObjectIdentifier(process)) }
    }

    /// A temporary directory to remove if the command is interrupted.
    public func removeOnInterrupt(_ path: String) {
        temporaryPaths.withLock { $0.append(path) }
    }

    /// Tears every remembered child down (SIGCONT, SIGTERM, SIGKILL after 3 s) and waits for
    /// them all, then removes the temporary directories.
    public func tearDownAll() async {
        let processes = running.withLock { Array($0.values) }
        await withTaskGroup(of: Void.self) { group in
            for process in processes { group.addTask { await process.tearDown() } }
        }
        for path in temporaryPaths.withLock({ $0 }) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Until the returned handle is cancelled, SIGINT, SIGTERM and SIGHUP tear the children down
    /// and exit with 130; children started meanwhile run in process groups of their own
    /// (``forwardsInterrupts``), so a terminal's Ctrl-C reaches them through this alone.
    public static func exitOnInterrupt() -> ShutdownSignals {
        shared.forwardsInterrupts = true
        return ShutdownSignals(cancelled: { shared.forwardsInterrupts = false }) {
            let done = DispatchSemaphore(value: 0)
            Task {
                await shared.tearDownAll()
                done.signal()
            }
            done.wait()
            FileHandle.standardError.write(Data("baton: interrupted; child processes stopped\n".utf8))
            exit(130)
        }
    }
}
