import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("Lock contention", .serialized)
    struct ContentionTests {
        @Test(
            "8 participants flipping at random 100 times each: one writer at a time, no SQLITE_BUSY, every sync done"
        )
        func contention() async throws {
            let f = try await CoordinatorFixture(records: 2_000)
            let names = (0..<8).map { "p\($0)" }
            for (index, name) in names.enumerated() {
                try await f.start(
                    name, role: index == 0 ? "host" : "extension", lifecycle: "background", batchSize: 100)
            }
            for name in names { #expect(try await f.wait(["--lifecycle", "\(name)=background"])) }

            var generator = SystemRandomNumberGenerator()
            for _ in 0..<100 {
                for name in names {
                    let state = Bool.random(using: &generator) ? "foreground" : "background"
                    // The plain shell way: a non-atomic write straight into the file.
                    try Data((state + "\n").utf8).write(
                        to: URL(fileURLWithPath: f.dir + "/lifecycle/" + name))
                }
                // Pacing a randomized stress driver between rounds, not waiting for a condition.
                let pause = Duration.milliseconds(Int.random(in: 1...15, using: &generator))
                try await Task.sleep(for: pause)  // wait-ok: deliberate pacing of the random flips
            }
            // One hand-over for certain, whatever the random flips achieved (on a loaded machine
            // they can outpace every hand-over): p1 alone in the foreground takes the lease and
            // writes (its sync's state), then p0 takes it for the settle.
            for name in names where name != names[1] { try await f.signal(name, "background") }
            try await f.signal(names[1], "foreground")
            #expect(try await f.wait(["--writer", names[1]], timeout: 120))
            try await f.waitForLog(names[1], "a sync state written after its last lease.acquired") { events in
                guard let acquired = events.lastIndex(where: { $0["event"] == "lease.acquired" }) else {
                    return false
                }
                return events[acquired...].contains { $0["event"] == "sync" }
            }
            // Settle: one participant in the foreground finishes the sync.
            try await f.signal(names[1], "background")
            try await f.signal(names[0], "foreground")
            #expect(try await f.wait(["--writer", names[0]], timeout: 120))
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))

            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            let history = try await BatonProcess.run(["lease", "history", "--dir", f.dir, "--json"])
            let intervals = try JSONValue(parsing: history.stdout).arrayValue ?? []
            // The lease moved among them: at least p1's turn and p0's, more as the random flips
            // completed hand-overs (fewer on a loaded machine: the flips do not wait for them).
            let holders = Set(intervals.compactMap { $0.value(atPath: "name")?.stringValue })
            #expect(holders.count >= 2, "holders: \(holders), \(intervals.count) intervals")
            for name in names {
                let errors = f.log(name).filter { $0["event"] == "writer.error" }
                #expect(errors.isEmpty, "\(name): \(errors.map { JSONValue.object($0).jsonString })")
            }
            let info = try await f.storeInfo()
            #expect(info.value(atPath: "integrity") == "ok")
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 2_000)
            let syncs = try await BatonProcess.run(["syncs", "--dir", f.dir, "--json"])
            let all = try JSONValue(parsing: syncs.stdout).arrayValue ?? []
            #expect(!all.isEmpty)
            #expect(all.allSatisfy { $0.value(atPath: "status") == "done" })
            try await f.finish()
        }
    }
}
