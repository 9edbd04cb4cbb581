import BatonREST
import BatonStore
import Foundation
import Testing

@testable import BatonCoordinator

@Suite("A writer that starts while a higher-priority participant already waits")
struct StartingWriterPriorityTests {
    /// The ordering chaos found once: the lock was granted before the host's `waiting` landed,
    /// and the loop read that status change before it handled its own grant, as a waiter. Here
    /// the lease is taken for the extension before it goes foreground (a grant still queued is
    /// used as it is, without looking at the statuses again), and the host's waiting status is on
    /// disk and read while the extension is still in the background: nothing more will say so.
    @Test(
        "it yields once it has started, though no change to the host's status comes after its grant",
        .timeLimit(.minutes(1)))
    func yieldsAfterStarting() async throws {
        let bed = try await ParticipantTestBed.start()
        let (shared, quiet, server) = (bed.shared, bed.quiet, bed.server)
        let client = RESTClient(baseURL: server.url, token: "t")
        let ext = try TestParticipant(
            "ext", role: .appExtension, .background, shared: shared, client: client, logger: quiet,
            batchSize: 200
        ).participant
        // The grant, taken before the participant looks at anything.
        #expect(try await ext.lease.tryAcquire() != nil)
        // A host (this process stands in for it: alive) waiting in the foreground, its name taken.
        #expect(FileManager.default.createFile(atPath: shared.participantsPath + "/host.lock", contents: nil))
        try ParticipantStatus(
            role: .host, name: "host", priority: 100, pid: getpid(), lifecycle: .foreground,
            phase: .waitingForLease, epoch: nil, managerState: "stopped",
            updated: Int64(Date().timeIntervalSince1970 * 1000)
        ).publish(in: shared)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await ext.run() }
            try await waitUntil(shared, "ext to publish in the background") {
                status(shared, "ext")?.lifecycle == .background
            }
            try LifecycleSignal.write(.foreground, directory: shared, name: "ext")
            try await waitForLog(shared, "ext", "ext to start as writer and yield to the host") { events in
                guard let acquired = events.firstIndex(where: { $0["event"] == "lease.acquired" }) else {
                    return false
                }
                return events[acquired...].contains {
                    $0["event"] == "lease.released" && $0["reason"] == "yield"
                }
            }
            // It then holds back for the host rather than taking the lease again.
            try await waitUntil(shared, "ext to wait behind the host") {
                status(shared, "ext")?.isWaiting == true
            }
            #expect(await ext.lease.current == nil)
            ext.shutdown()
            try await group.waitForAll()
        }
        await server.stop()
        withExtendedLifetime(bed) {}
    }
}
