import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("baton syncs")
struct SyncsCommandTests {
    @Test("lists persisted sync states, filtered by status, as a table or JSON")
    func listing() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        try await unfenced.write { transaction in
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "accounts", type: "syncDown",
                    target: ["type": "soql", "query": "SELECT Id FROM Account"],
                    options: ["mergeMode": "overwrite"], soupName: "accounts", status: "stopped",
                    progress: 50, totalSize: 10,
                    maxTimeStamp: 1_700_000_000_000))
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "up", type: "syncUp", target: ["type": "rest", "objectType": "Account"],
                    options: [:],
                    soupName: "accounts", status: "done", progress: 100, totalSize: 3))
        }
        let all = try await BatonProcess.run(["syncs", "--dir", dir, "--json"])
        #expect(all.status == 0, "stderr: \(all.stderr)")
        let parsed = try JSONValue(parsing: all.stdout).arrayValue ?? []
        #expect(parsed.count == 2)
        #expect(parsed.first?.value(atPath: "status") == "stopped")
        #expect(parsed.first?.value(atPath: "progress") == 50)
        #expect(parsed.first?.value(atPath: "maxTimeStamp") == 1_700_000_000_000)

        let stopped = try await BatonProcess.run(["syncs", "--dir", dir, "--status", "stopped"])
        #expect(stopped.status == 0)
        #expect(stopped.stdout.contains("accounts"))
        #expect(stopped.stdout.contains("50%"))
        // Each sync's target type is a column of its own.
        #expect(stopped.stdout.contains("TARGET"))
        #expect(stopped.stdout.split(separator: "\n").last?.contains(" soql ") == true)
        #expect(!stopped.stdout.contains("syncUp"))

        let bad = try await BatonProcess.run(["syncs", "--dir", dir, "--status", "paused"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--status must be one of"))
    }
}
