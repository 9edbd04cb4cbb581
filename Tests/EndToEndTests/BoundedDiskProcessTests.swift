import BatonCoordinator
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Bounded disk use, as processes")
struct BoundedDiskProcessTests {
    @Test(
        "lease limit folds the history: lease history shows the fold, lease check still fails on a folded violation, store info shows the sizes"
    )
    func leaseLimitThroughTheCLI() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let create = try await BatonProcess.run([
            "store", "soup", "create", "--dir", dir, "s", "--index", "id",
        ])
        #expect(create.status == 0, "\(create.stderr)")
        let shown = try await BatonProcess.run(["lease", "limit", "--dir", dir])
        #expect(shown.stdout.contains("1 interval (limit 10000)"), "\(shown.stdout)")
        #expect(try await BatonProcess.run(["lease", "limit", "--dir", dir, "9"]).status == 64)
        let set = try await BatonProcess.run(["lease", "limit", "--dir", dir, "10"])
        #expect(set.status == 0 && set.stdout.contains("(limit 10)"), "\(set.stdout)\(set.stderr)")

        // Another process writes outside the lease while this one holds it.
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let shared = try SharedDirectory(path: dir)
        let store = try SharedStore.open(directory: shared, create: false, logger: quiet)
        let lease = try WriterLease(directory: shared, store: store, name: "host")
        let held = try await lease.acquire(deadline: .now + .seconds(30))
        try await store.write(held.fence) { try $0.upsert(["id": "0"], into: "s", externalIdPath: "id") }
        let intruder = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "s", "--unleased", #"{"id":"x"}"#,
        ])
        #expect(intruder.status == 0, "\(intruder.stderr)")
        lease.release(held)
        // And again once it let go, before anyone else took the lease: a violation only in
        // strict mode.
        let released = try #require(HeartbeatRecord.read(at: shared.writerLockPath)?.closing(of: held.epoch))
        while WallClock.nowMillis() <= released.at {}
        let late = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "s", "--unleased", #"{"id":"y"}"#,
        ])
        #expect(late.status == 0, "\(late.stderr)")
        // Hand-overs to tools until that holding is folded.
        for n in 1...20 {
            let upsert = try await BatonProcess.run([
                "store", "upsert", "--dir", dir, "--soup", "s", "--external-id", "id", #"{"id":"\#(n)"}"#,
            ])
            #expect(upsert.status == 0, "\(upsert.stderr)")
        }

        let history = try await BatonProcess.run(["lease", "history", "--dir", dir, "--json"])
        let entries = try #require(try JSONValue(parsing: history.stdout).arrayValue)
        let folded = try #require(entries.first?.value(atPath: "folded"))
        #expect(entries.count - 1 <= 10)
        #expect(folded.value(atPath: "firstEpoch") == 1 && folded.value(atPath: "violations") == 1)
        #expect(
            folded.value(atPath: "strictViolations") == 1 && folded.value(atPath: "commitsOutsideLease") == 2)
        #expect((folded.value(atPath: "lastEpoch")?.intValue ?? 0) >= held.epoch)
        let table = try await BatonProcess.run(["lease", "history", "--dir", dir])
        #expect(
            table.stdout.contains("(folded)") && table.stdout.contains("1 violation(s), 1 outside any lease"),
            "\(table.stdout)")

        for strict in [false, true] {
            let check = try await BatonProcess.run(
                ["lease", "check", "--dir", dir] + (strict ? ["--strict"] : []))
            #expect(check.status == 1)
            let warnings = check.stderr.split(separator: "\n")
                .filter { $0.contains("warning: epoch \(held.epoch): commit") }
            #expect(warnings.count == (strict ? 2 : 1), "\(check.stderr)")
            #expect(
                check.stderr.contains("lease check failed: \(strict ? 2 : 1) violation(s)"), "\(check.stderr)"
            )
        }

        let log = try ParticipantLog(directory: shared, name: "host", limit: 1024)
        for n in 1...50 { log.log("event", ["n": .int(Int64(n))]) }
        let info = try JSONValue(
            parsing: try await BatonProcess.run(["store", "info", "--dir", dir, "--json"]).stdout)
        #expect((info.value(atPath: "leaseHistory.intervals")?.intValue ?? 99) <= 10)
        #expect(info.value(atPath: "leaseHistory.limit") == 10)
        #expect((info.value(atPath: "leaseHistory.folded")?.intValue ?? 0) > 0)
        #expect((info.value(atPath: "leaseHistory.commitLog")?.intValue ?? 0) >= 25)
        let logs = try #require(info.value(atPath: "logs")?.arrayValue)
        #expect(logs.compactMap { $0.value(atPath: "name")?.stringValue } == ["host.jsonl", "host.jsonl.1"])
        #expect(logs.allSatisfy { (1...1024).contains($0.value(atPath: "bytes")?.intValue ?? 0) })
        let text = try await BatonProcess.run(["store", "info", "--dir", dir])
        #expect(
            text.stdout.contains("lease history:") && text.stdout.contains("folded (epochs 1-"),
            "\(text.stdout)")
        #expect(text.stdout.contains("host.jsonl.1"), "\(text.stdout)")
    }

    @Test("participant --log-limit takes a size, and refuses anything else", arguments: ["8Q", "512", "-1"])
    func logLimitRefused(value: String) async throws {
        let temp = try TemporaryDirectory()
        let result = try await BatonProcess.run([
            "participant", "--dir", temp.path + "/d", "--name", "host", "--role", "host", "--server",
            "http://127.0.0.1:9", "--token", "t", "--log-limit", value,
        ])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--log-limit"), "\(result.stderr)")
    }

    @Test(
        "participant's durations refuse what is out of range or not a number, naming the option",
        arguments: [
            ("--save-grace", "-1"), ("--save-grace", "soon"), ("--stop-deadline", "0"),
            ("--lease-term", "0.01"),
            ("--busy-timeout", "-1"), ("--retry-delay", "4000"),
        ])
    func durationRefused(option: String, value: String) async throws {
        let temp = try TemporaryDirectory()
        let result = try await BatonProcess.run([
            "participant", "--dir", temp.path + "/d", "--name", "host", "--role", "host", "--server",
            "http://127.0.0.1:9", "--token", "t", option, value,
        ])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(option), "\(result.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: temp.path + "/d"),
            "nothing is created for a refused start")
    }
}

extension HeavyEndToEnd {
    @Suite("A participant's log rotation, as a process")
    struct LogRotationProcessTests {
        @Test("baton participant --log-limit: the log rotates to one old file within the limit, read whole")
        func participantLogRotates() async throws {
            let f = try await CoordinatorFixture(records: 300)
            try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 10, extra: ["--log-limit", "2K"])
            #expect(try await f.wait(["--sync", "accounts=done"]))
            let logs = f.dir + "/logs/"
            var sizes: [String: Int64] = [:]
            for name in ["host.jsonl", "host.jsonl.1", "host.jsonl.2"] {
                var status = stat()
                if stat(logs + name, &status) == 0 { sizes[name] = Int64(status.st_size) }
            }
            #expect(Set(sizes.keys) == ["host.jsonl", "host.jsonl.1"], "\(sizes)")
            #expect(sizes.values.allSatisfy { $0 <= 2048 }, "\(sizes)")
            // Read with the rotated file: whole events, the last sync state done.
            let events = f.log("host")
            #expect(events.count >= 10)
            #expect(events.last { $0["event"] == "sync" }?["status"] == "done")
            try await f.finish()
        }
    }
}
