import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("baton watch", .serialized)
    struct WatchCommandTests {
        @Test("prints the change sequence and soup counts as the writer commits pages")
        func watch() async throws {
            let f = try await CoordinatorFixture(records: 2_000)
            try await f.client.adminSetFaults(["latencyMs": 20])
            try await f.start("host", role: "host", lifecycle: "background", batchSize: 200)
            #expect(try await f.wait(["--lifecycle", "host=background"]))
            let watcher = try await BatonProcess(["watch", "--dir", f.dir, "--json"])
            try await watcher.waitForLine(containing: "changeSequence")
            try await f.signal("host", "foreground")
            try await watcher.waitForOutput("the soup at 2000 records") { out, _ in
                out.contains("\"accounts\":2000")
            }
            await watcher.send(SIGTERM)
            _ = try await watcher.wait()
            let lines = watcher.stdout.split(separator: "\n").compactMap {
                try? JSONValue(parsing: String($0))
            }
            let sequences = lines.compactMap { $0.value(atPath: "changeSequence")?.intValue }
            #expect(sequences.count >= 3)
            #expect(sequences == sequences.sorted())
            #expect(Set(sequences).count == sequences.count)
            try await f.finish()
            // A clean shutdown closed every lease interval.
            let history = try await BatonProcess.run(["lease", "history", "--dir", f.dir, "--json"])
            let intervals = try JSONValue(parsing: history.stdout).arrayValue ?? []
            #expect(!intervals.isEmpty)
            #expect(intervals.allSatisfy { $0.value(atPath: "releaseKind") == "released" })
        }
    }
}
