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

    @Test("shows a sync up's refused count, and --refused lists its records with their errors")
    func refusedListing() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        try unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        var refusedCreate = LocalFlags.markCreated(["Name": ""])
        refusedCreate[LocalFlags.lastError] =
            "REQUIRED_FIELD_MISSING on Name: Required fields are missing: [Name]"
        var refusedUpdate = LocalFlags.markUpdated(["Id": "001000000000001AAA", "Name": "Moved"])
        refusedUpdate[LocalFlags.lastError] = "deleted on the server"
        try unfenced.upsert(refusedCreate, into: "accounts")
        try unfenced.upsert(refusedUpdate, into: "accounts")
        try unfenced.upsert(
            LocalFlags.clean(["Id": "001000000000002AAA", "Name": "Fine"], syncId: nil), into: "accounts")
        try await unfenced.write { transaction in
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "up", type: "syncUp", target: ["type": "rest", "objectType": "Account"],
                    options: [:],
                    soupName: "accounts", status: "done", progress: 100, totalSize: 3, refusedCount: 2))
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "down", type: "syncDown",
                    target: ["type": "soql", "query": "SELECT Id FROM Account"],
                    options: [:], soupName: "accounts", status: "done"))
        }
        let table = try await BatonProcess.run(["syncs", "--dir", dir])
        #expect(table.status == 0, "stderr: \(table.stderr)")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first?.contains("REFUSED") == true)
        let up = try #require(lines.first { $0.contains(" up ") })
        #expect(up.split(separator: " ", omittingEmptySubsequences: true).contains("2"))
        let json = try await BatonProcess.run(["syncs", "--dir", dir, "--json"])
        let parsed = try JSONValue(parsing: json.stdout).arrayValue ?? []
        #expect(parsed.first?.value(atPath: "refusedCount") == 2)
        #expect(parsed.last?.value(atPath: "refusedCount") == nil, "a sync down has no refused count")

        let listing = try await BatonProcess.run(["syncs", "--dir", dir, "--refused", "up"])
        #expect(listing.status == 0, "stderr: \(listing.stderr)")
        #expect(listing.stdout.contains("up: 2 refused in its last run; 2 records not synced"))
        #expect(listing.stdout.contains("REQUIRED_FIELD_MISSING on Name"))
        #expect(
            listing.stdout.contains("001000000000001AAA") && listing.stdout.contains("deleted on the server"))
        #expect(!listing.stdout.contains("001000000000002AAA"))
        let listed = try await BatonProcess.run(["syncs", "--dir", dir, "--refused", "up", "--json"])
        let records = try JSONValue(parsing: listed.stdout).value(atPath: "records")?.arrayValue ?? []
        #expect(records.count == 2)
        #expect(records.allSatisfy { ($0.value(atPath: "error")?.stringValue ?? "").isEmpty == false })

        let down = try await BatonProcess.run(["syncs", "--dir", dir, "--refused", "down"])
        #expect(down.status == 2)
        #expect(down.stderr.contains("is a sync down"))
        let missing = try await BatonProcess.run(["syncs", "--dir", dir, "--refused", "nope"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no sync named 'nope'"))
    }
}
