import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("Several syncs at once, across a hand-over", .timeLimit(.minutes(4)))
    struct ConcurrentSyncProcessTests {
        /// The participants' `accounts` sync and seven more, each into its own soup.
        static let names = ["accounts"] + (1...7).map { "s\($0)" }

        @Test(
            "8 syncs running at once stop mid-run on a hand-over and resume in the other process from their own marks, losing and duplicating nothing"
        )
        func eightAcrossAHandOver() async throws {
            let f = try await CoordinatorFixture(records: 6_000)
            // 30 pages of 200 a sync, 100 ms a request: every sync is mid-run when the host leaves.
            try await f.client.adminSetFaults(["latencyMs": 100])
            var extra = ["--concurrent-syncs", "8"]
            for name in Self.names.dropFirst() {
                extra += ["--sync-down", "\(name):\(name):SELECT Id, Name, Number__c FROM Account"]
            }
            try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 200, extra: extra)
            try await f.waitForLog("host", "every sync to save a page") { log in
                let paging = Set(
                    log.filter { $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0 }
                        .compactMap { $0["name"]?.stringValue })
                return paging.count == Self.names.count
            }
            try await f.start("ext", role: "extension", lifecycle: "foreground", batchSize: 200, extra: extra)
            try await f.signal("host", "background")
            for name in Self.names {
                #expect(try await f.wait(["--sync", "\(name)=done"], timeout: 120), "\(name)")
            }
            // The host stopped each of them, at once, before it let the lease go.
            let host = f.log("host")
            let stopped = Set(
                host.filter { $0["event"] == "sync" && $0["status"] == "stopped" }.compactMap {
                    $0["name"]?.stringValue
                })
            #expect(stopped == Set(Self.names), "stopped: \(stopped.sorted())")
            #expect(try await f.wait(["--writer", "ext"]))
            // Every soup holds each account once.
            let info = try await f.storeInfo()
            let counts = Dictionary(
                uniqueKeysWithValues: (info.value(atPath: "soups")?.arrayValue ?? []).compactMap { soup in
                    soup.value(atPath: "name")?.stringValue.map {
                        ($0, soup.value(atPath: "count")?.intValue ?? -1)
                    }
                })
            for name in Self.names { #expect(counts[name] == 6_000, "\(name): \(counts[name] ?? -1)") }
            try await f.finish()
            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }
    }
}
