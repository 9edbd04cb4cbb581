import BatonCoordinator
import BatonJSON
import BatonTestSupport
import Foundation
import Testing

@Suite("Retried syncs in status and syncs")
struct RetryStatusTests {
    @Test("an unreachable server: the sync fails with a clear error; status and syncs show the retry")
    func unreachableServer() async throws {
        let f = try await CoordinatorFixture(records: 0)
        let participant = try await BatonProcess(
            [
                "participant", "--dir", f.dir, "--name", "host", "--role", "host", "--server",
                "http://127.0.0.1:1", "--lifecycle", "foreground", "--sync-down",
                "accounts:accounts:SELECT Id FROM Account",
            ], environment: ["BATON_TOKEN": "t"])
        defer { participant.sendDetached(SIGTERM) }
        let refused = "cannot reach http://127.0.0.1:1: connection refused"
        try await f.waitForStatus("a published retry of accounts") { statuses in
            statuses.contains {
                $0.retrying.contains { $0.name == "accounts" && $0.lastError.contains(refused) }
            }
        }
        let state = try #require(try await f.syncState("accounts"))
        #expect(state.value(atPath: "error")?.stringValue?.contains(refused) == true)
        #expect((state.value(atPath: "retry.nextAttempt")?.intValue ?? 0) > 0)
        #expect((state.value(atPath: "retry.attempt")?.intValue ?? 0) >= 1)
        let table = try await BatonProcess.run(["syncs", "--dir", f.dir])
        #expect(table.stdout.contains(refused))
        #expect(table.stdout.contains("; retry "))
        let status = try await BatonProcess.run(["status", "--dir", f.dir])
        #expect(status.stdout.contains("retrying: host: accounts: attempt"), "\(status.stdout)")
    }

    @Test("a retry that succeeds clears the published retry and the error")
    func retryThenDone() async throws {
        let f = try await CoordinatorFixture(records: 30)
        // The first attempt's query fails on each of the client's 4 tries; the retry succeeds.
        try await f.client.adminSetFaults(["failNext": 4])
        try await f.start("host", role: "host", lifecycle: "foreground")
        try await f.waitForStatus("a published retry of accounts") { statuses in
            statuses.contains { $0.retrying.contains { $0.name == "accounts" } }
        }
        try await f.waitForStatus("the retry to end") { statuses in
            statuses.contains { $0.name == "host" && $0.retrying.isEmpty }
        }
        #expect(try await f.wait(["--sync", "accounts=done"]))
        let state = try #require(try await f.syncState("accounts"))
        #expect(state.value(atPath: "status") == "done")
        #expect((state.value(atPath: "error") ?? .null) == .null)
        #expect((state.value(atPath: "retry") ?? .null) == .null)
        try await f.finish()
    }
}
