import BatonLocking
import Foundation

/// The child processes a command started (the demo's participants, a chaos run's, the bench's
/// workers), so that an interrupted command (SIGINT, SIGTERM, SIGHUP) takes them down with it instead of
/// leaving orphans.
public final class ChildProcesses: Sendable {
    public static let shared = ChildProcesses()

    private let running = Locked<[ObjectIdentifier: ChildProcess]>([:])
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
    /// and exit with 130. The children run in process groups of their own
    /// (``ChildProcess/start(_:_:environment:input:stdout:stderr:registry:)``), so a terminal's
    /// Ctrl-C reaches them through this alone.
    public static func exitOnInterrupt() -> ShutdownSignals {
        ShutdownSignals {
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
