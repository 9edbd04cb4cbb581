import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore
import Foundation

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a condition holds: exit 0 when it does, 1 on timeout.",
        discussion: """
            Re-checks on inotify events in D/participants, D/lifecycle and D/changes (the writer \
            replaces D/changes after each commit); it never polls, and uses no CPU while nothing \
            changes.
            """
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "Wait until participant NAME holds the writer lease.") var writer: String?
    @Flag(name: .customLong("no-writer"), help: "Wait until nobody holds the writer lease.") var noWriter =
        false
    @Option(help: "NAME=STATUS: wait until sync NAME has STATUS.") var sync: String?
    @Option(help: "NAME=STATE: wait until participant NAME is foreground or background (as published).")
    var lifecycle: String?
    @Option(help: "Give up after this many seconds.") var timeout: Double = 60

    func validate() throws {
        let given = [writer != nil, noWriter, sync != nil, lifecycle != nil].filter { $0 }.count
        guard given == 1 else {
            throw ValidationError("give exactly one of --writer, --no-writer, --sync, --lifecycle")
        }
        if let sync, sync.split(separator: "=").count != 2 {
            throw ValidationError("--sync takes NAME=STATUS")
        }
        if let lifecycle {
            let parts = lifecycle.split(separator: "=").map(String.init)
            guard parts.count == 2, Lifecycle(rawValue: parts[1]) != nil else {
                throw ValidationError("--lifecycle takes NAME=foreground|background")
            }
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func holds() -> Bool {
        guard let snapshot = try? CoordinatorSnapshot.read(directory.dir) else { return false }
        if let writer {
            return snapshot.writer?.name == writer
                && snapshot.participants.contains { $0.name == writer && $0.isWriter }
        }
        if noWriter {
            return snapshot.writer == nil && !snapshot.participants.contains { $0.isWriter && $0.isAlive }
        }
        if let sync {
            let parts = sync.split(separator: "=").map(String.init)
            return snapshot.syncStatuses[parts[0]] == parts[1]
        }
        if let lifecycle {
            let parts = lifecycle.split(separator: "=").map(String.init)
            return snapshot.participants.contains { $0.name == parts[0] && $0.lifecycle.rawValue == parts[1] }
        }
        return false
    }

    func run() async throws {
        let shared = try SharedDirectory(path: directory.dir)
        for sub in [shared.lifecyclePath, shared.participantsPath] { try shared.ensureSubdirectory(sub) }
        // In the root only the change doorbell matters: the store files and setup.lock change
        // when a check opens the store, and must not wake the wait again.
        let met = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["lifecycle", "participants"]
        )
        .wait(
            timeout: .milliseconds(Int(timeout * 1000)),
            relevant: { event in
                guard case .changed(let directory, let name) = event else { return true }
                switch directory {
                case "": return name == "changes"
                case "participants": return ParticipantStatus.isStatusFile(name, in: shared)
                default: return true
                }
            }
        ) { self.holds() }
        guard met else { throw CLIError(message: "timed out after \(timeout)s", exitCode: 1) }
    }
}
