import BatonCoordinator
import BatonJSON
import BatonStore
import BatonTestSupport
import Foundation
import GRDB
import Testing

extension HeavyEndToEnd {
    /// Issue 53: every commit visible to the audit, and read-only commands commit nothing.
    @Suite("Writes from outside Baton, in processes", .serialized, .timeLimit(.minutes(3)))
    struct ForeignWriteProcessTests {
        /// A connection of its own on the store, as `sqlite3` opens it.
        static func foreign(_ dir: String) throws -> DatabaseQueue {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            return try DatabaseQueue(path: dir + "/store.sqlite", configuration: configuration)
        }

        @Test(
            "a foreign INSERT, UPDATE or DELETE on a soup while a participant writes is refused; one past a dropped guard fails lease check --strict naming the table, is shown by the next writer, and store init restores the guard"
        )
        func foreignWrites() async throws {
            let f = try await CoordinatorFixture(records: 3_000)
            try await f.client.adminSetFaults(["latencyMs": 20])
            try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 100)
            try await f.waitForLog("host", "a page saved") { log in
                log.contains { $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0 }
            }
            let queue = try Self.foreign(f.dir)
            for sql in [
                "INSERT INTO soup_1 (json, created, lastModified) VALUES ('{}', 0, 0)",
                "UPDATE soup_1 SET json = '{}'", "DELETE FROM soup_1",
            ] {
                #expect(throws: DatabaseError.self, "\(sql)") { try queue.write { try $0.execute(sql: sql) } }
            }
            try await f.client.adminClearFaults()
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 90))
            let passed = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(passed.status == 0, "\(passed.stdout)\(passed.stderr)")

            // A determined user: drop the guard, then write.
            try await queue.write { db in
                try db.execute(sql: "DROP TRIGGER baton_guard_soup_1_delete")
                try db.execute(sql: "DELETE FROM soup_1 WHERE id = 1")
            }
            let failed = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
            #expect(failed.stderr.contains("soup_1: its DELETE guard"), "\(failed.stderr)")
            #expect(failed.stderr.contains("lease check failed"), "\(failed.stderr)")
            // The next writer start says so in its status.
            try await f.signal("host", "background")
            #expect(try await f.wait(["--no-writer"]))
            try await f.signal("host", "foreground")
            try await f.waitForStatus("the host to show the missing guard") { statuses in
                statuses.contains {
                    $0.name == "host" && ($0.problem ?? "").contains("soup_1: its DELETE guard")
                }
            }
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(
                status.stdout.contains("something other than Baton changed the store"), "\(status.stdout)")
            try await f.finish()

            let restored = try await BatonProcess.run(["store", "init", "--dir", f.dir])
            #expect(restored.stdout.contains("write guards restored on: soup_1"), "\(restored.stdout)")
            let again = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        }

        @Test("read-only commands commit nothing: the log stays empty after a truncating checkpoint")
        func readOnlyCommandsCommitNothing() async throws {
            let f = try await CoordinatorFixture(records: 200)
            try await f.start("host", role: "host", lifecycle: "foreground")
            #expect(try await f.wait(["--sync", "accounts=done"]))
            try await f.finish()
            let wal = f.dir + "/store.sqlite-wal"
            for command in [
                ["status"], ["syncs"], ["store", "info"], ["store", "query", "--soup", "accounts"],
                ["lease", "check", "--strict"],
                ["lease", "history"], ["wait", "--no-writer", "--timeout", "5"],
            ] {
                try await Self.foreign(f.dir).writeWithoutTransaction {
                    try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                }
                // Absent: empty.
                let size = { (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
                try #require(size() == 0, "the checkpoint left \(size()) bytes")
                let result = try await BatonProcess.run(command + ["--dir", f.dir])
                #expect(result.status == 0, "\(command): \(result.stderr)")
                #expect(size() == 0, "\(command) wrote \(size()) bytes to the log")
            }
        }
    }
}
