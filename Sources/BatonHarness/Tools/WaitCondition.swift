import BatonCoordinator
import BatonStore
import Foundation

/// What `baton wait` waits for, checked on a fresh ``CoordinatorSnapshot``.
public enum WaitCondition: Sendable, Equatable {
    /// Participant NAME holds the writer lease.
    case writer(String)
    /// Nobody holds the writer lease.
    case noWriter
    /// Sync NAME has this status.
    case sync(name: String, status: String)
    /// Participant NAME publishes this lifecycle.
    case lifecycle(name: String, state: Lifecycle)

    public func holds(in snapshot: CoordinatorSnapshot) -> Bool {
        switch self {
        case .writer(let name):
            snapshot.writer?.name == name && snapshot.participants.contains { $0.name == name && $0.isWriter }
        case .noWriter:
            snapshot.writer == nil && !snapshot.participants.contains { $0.isWriter && $0.isAlive }
        case .sync(let name, let status):
            snapshot.syncStatuses[name] == status
        case .lifecycle(let name, let state):
            snapshot.participants.contains { $0.name == name && $0.lifecycle == state }
        }
    }

    /// Waits (on inotify events in D/participants, D/lifecycle and D/changes, never polling)
    /// until the condition holds in the shared directory at `path`; false after `timeout`.
    ///
    /// - Throws: `directoryUnavailable` when there is no shared directory at `path` (a wait
    ///   never creates one: a mistyped path would wait out its timeout for nothing).
    public func wait(in path: String, timeout: Duration) async throws -> Bool {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(
                .directoryUnavailable,
                "no shared directory at \(path); start a participant there (or baton store init) first, or pass the right --dir"
            )
        }
        let shared = try SharedDirectory(path: path, create: false)
        for sub in [shared.lifecyclePath, shared.participantsPath] { try shared.ensureSubdirectory(sub) }
        // In the root only the change doorbell matters: the store files and setup.lock change
        // when a check opens the store, and must not wake the wait again.
        return try await DirectoryWatcher(root: shared.path, subdirectories: ["lifecycle", "participants"])
            .wait(
                timeout: timeout,
                relevant: { event in
                    guard case .changed(let directory, let name) = event else { return true }
                    switch directory {
                    case "": return name == "changes"
                    case "participants": return ParticipantStatus.isStatusFile(name, in: shared)
                    default: return true
                    }
                }
            ) { (try? CoordinatorSnapshot.read(path)).map(holds) ?? false }
    }
}
