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
            // Settle: one participant in the foreground finishes the sync.
            for name in names.dropFirst() { try await f.signal(name, "background") }
            try await f.signal(names[0], "foreground")
            #expect(try await f.wait(["--writer", names[0]], timeout: 120))
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))

            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            let history = try await BatonProcess.run(["lease", "history", "--dir", f.dir, "--json"])
            let intervals = try JSONValue(parsing: history.stdout).arrayValue ?? []
            // The lease really moved among them (how often depends on the machine's speed: the
            // flips do not wait for hand-overs, so a loaded machine completes fewer).
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
