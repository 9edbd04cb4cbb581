import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Store shared by processes")
struct StoreProcessTests {
    @Test("processes opening and migrating one new store at once all succeed with one schema")
    func concurrentSetup() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        var processes: [BatonProcess] = []
        for _ in 0..<6 {
            processes.append(
                try await BatonProcess(["store", "soup", "create", "--dir", dir, "accounts", "--index", "Id"])
            )
        }
        for process in processes {
            let result = try await process.wait()
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }
        let info = try await BatonProcess.run(["store", "info", "--dir", dir, "--json"])
        #expect(info.status == 0)
        let object = try JSONValue(parsing: info.stdout)
        #expect(object.value(atPath: "integrity") == "ok")
        let soups = object.value(atPath: "soups")?.arrayValue ?? []
        #expect(soups.count == 1)
        #expect(soups.first?.value(atPath: "name") == "accounts")
    }

    @Test(
        "a reader in another process sees the last commit while a writer holds a transaction; a killed writer loses only its transaction"
    )
    func readerNotBlockedAndKilledWriter() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let create = try await BatonProcess.run([
            "store", "soup", "create", "--dir", dir, "accounts", "--index", "Id",
        ])
        #expect(create.status == 0)
        let committed = try await BatonProcess.run(
            ["store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Id"],
            stdin: "{\"Id\":\"1\"}\n{\"Id\":\"2\"}\n")
        #expect(committed.status == 0, "stderr: \(committed.stderr)")

        let holder = try await BatonProcess(
            [
                "store", "upsert", "--dir", dir, "--soup", "accounts", "--hold-transaction", "{\"Id\":\"3\"}",
                "{\"Id\":\"4\"}",
            ])
        try await holder.waitForLine(containing: "holding transaction")

        // Another process reads while the write transaction is open: it answers (bounded by
        // the timeout, so a blocked reader fails the test) and sees exactly the last commit.
        let during = try await BatonProcess.run(
            ["store", "query", "--dir", dir, "--soup", "accounts", "--count"], timeout: .seconds(30))
        #expect(during.status == 0, "stderr: \(during.stderr)")
        #expect(during.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2")

        await holder.send(SIGKILL)
        let killed = try await holder.wait()
        #expect(killed.signaled)

        let info = try await BatonProcess.run(["store", "info", "--dir", dir, "--json"])
        let object = try JSONValue(parsing: info.stdout)
        #expect(object.value(atPath: "integrity") == "ok")
        #expect(object.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 2)

        // The store still takes writes after the crash.
        let after = try await BatonProcess.run(
            ["store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Id", "{\"Id\":\"5\"}"])
        #expect(after.status == 0, "stderr: \(after.stderr)")
    }
}
