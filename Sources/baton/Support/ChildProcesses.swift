import Foundation
import Synchronization

/// The `baton participant` processes a command started (the demo's, a chaos run's), so that an
/// interrupted command (SIGINT, SIGTERM) takes them down with it instead of leaving orphans.
final class ChildProcesses: Sendable {
    static let shared = ChildProcesses()

    private let pids = Mutex<Set<pid_t>>([])
    private let temporaryPaths = Mutex<[String]>([])

    /// This executable, to start participants with (the same build as the running command).
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    }

    /// Starts `process` and remembers it.
    func run(_ process: Process) throws {
        try process.run()
        let pid = process.processIdentifier
        pids.withLock { _ = $0.insert(pid) }
    }

    /// Forgets a process that has exited.
    func forget(_ pid: pid_t) {
        pids.withLock { _ = $0.remove(pid) }
    }

    /// A temporary directory to remove if the command is interrupted.
    func removeOnInterrupt(_ path: String) {
        temporaryPaths.withLock { $0.append(path) }
    }

    /// Wakes (SIGCONT) and terminates (SIGTERM, a clean shutdown) every remembered process.
    func terminateAll() {
        for pid in pids.withLock({ $0 }) {
            kill(pid, SIGCONT)
            kill(pid, SIGTERM)
        }
    }

    /// Until the returned handle is cancelled, SIGINT and SIGTERM terminate the children and
    /// exit with 130.
    static func exitOnInterrupt() -> ShutdownSignals {
        ShutdownSignals {
            shared.terminateAll()
            // Give them up to 3 s to release and exit, then remove the temporary directories.
            for _ in 0..<300 where shared.pids.withLock({ $0 }).contains(where: { kill($0, 0) == 0 }) {
                usleep(10_000)
            }
            for path in shared.temporaryPaths.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: path)
            }
            FileHandle.standardError.write(Data("baton: interrupted; participants stopped\n".utf8))
            exit(130)
        }
    }
}
