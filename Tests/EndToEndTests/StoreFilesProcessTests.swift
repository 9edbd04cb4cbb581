import BatonCoordinator
import BatonJSON
import BatonStore
import Foundation
import GRDB
import Testing

extension CoordinatorFixture {
    /// CPU time (user + system) `name`'s process has used so far, from `/proc/PID/stat`.
    func cpuSeconds(_ name: String) throws -> Double {
        let pid = try #require(processes[name]?.pid)
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which may hold spaces) in parentheses: utime is the
        // 14th field of the line, stime the 15th.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func logSize(_ name: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: dir + "/logs/\(name).jsonl")[.size] as? Int) ?? 0
    }

    /// The holder's epoch in `D/writer.lock`.
    var lockEpoch: Int64 { Int64(HeartbeatRecord.read(at: dir + "/writer.lock")?.epoch ?? 0) }

    /// A host syncing 5,000 accounts (slowly: 10 ms a request, pages of 200) as the writer, and
    /// an extension in the foreground waiting for the lease, once the host committed a page.
    static func hostAndWaitingExtension() async throws -> CoordinatorFixture {
        let f = try await CoordinatorFixture(records: 5_000)
        try await f.client.adminSetFaults(["latencyMs": 10])
        try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 200)
        #expect(try await f.wait(["--writer", "host"]))
        try await f.start("ext", role: "extension", lifecycle: "foreground", batchSize: 200)
        try await f.waitForStatus("ext waiting") { $0.contains { $0.name == "ext" && $0.isWaiting } }
        try await f.waitForLog("host", "a committed page") { log in
            (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 1
        }
        return f
    }

    /// Both participants logged `event`.
    func waitForBoth(_ event: String, timeout: Duration = .seconds(60)) async throws {
        for name in ["host", "ext"] {
            try await waitForLog(name, event, timeout: timeout) { log in
                log.contains { $0["event"]?.stringValue == event }
            }
        }
    }

    /// The end every store-file test shares: the host writes again, its sync finishes with the
    /// store equal to the server, every problem clears, and the strict lease audit passes.
    func finishesWithEveryRecord() async throws {
        #expect(try await wait(["--writer", "host"]))
        #expect(try await wait(["--sync", "accounts=done"], timeout: 120))
        try await waitForStatus("the problems cleared") { statuses in
            statuses.allSatisfy { $0.problem == nil }
        }
        let (missing, extra, local) = try await compareStoreWithServer()
        #expect(missing == 0 && extra == 0 && local == 5_000, "missing \(missing), extra \(extra), \(local)")
        try await finish()
        let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", dir])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let info = try await storeInfo()
        #expect(info.value(atPath: "integrity")?.stringValue == "ok", "\(info)")
    }
}

extension HeavyEndToEnd {
    /// The store's three files (`store.sqlite`, `-wal`, `-shm`) moved, replaced or deleted under
    /// running participants, as a user or a backup tool might.
    @Suite("Store files under running participants", .serialized)
    struct StoreFilesProcessTests {
        @Test(
            "a store moved away for 20 s: no lease churn, little CPU and log; moved back, the problem clears at once and the sync finishes"
        )
        func movedAway() async throws {
            let f = try await CoordinatorFixture.hostAndWaitingExtension()
            let store = f.dir + "/store.sqlite"
            let away = f.temp.path + "/store.sqlite.away"
            try FileManager.default.moveItem(atPath: store, toPath: away)
            try await f.waitForBoth("store.lost")
            try await f.waitForLog("host", "the lease handed back") { log in
                log.contains { $0["event"] == "lease.released" && $0["reason"] == "store-lost" }
            }
            let epoch = f.lockEpoch
            let cpu = try ["host", "ext"].map { try f.cpuSeconds($0) }
            let logs = ["host", "ext"].map { f.logSize($0) }
            // The 20 s the store stays away are the point of the test: a participant that churned
            // the lease or polled the file would show it in its epochs, CPU time and log.
            try await Task.sleep(for: .seconds(20))  // wait-ok
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(status.stdout.contains("problem: host:"), "\(status.stdout)")
            #expect(status.stdout.contains(store), "the problem names the file: \(status.stdout)")
            #expect(f.lockEpoch == epoch, "nobody took the lease without a store")
            for (index, name) in ["host", "ext"].enumerated() {
                let used = try f.cpuSeconds(name) - cpu[index]
                #expect(used < 1, "\(name) used \(used) s of CPU in 20 s without a store")
                let logged = f.logSize(name) - logs[index]
                #expect(logged < 16_384, "\(name) logged \(logged) bytes in 20 s without a store")
            }
            let checks = f.events("host", "problem").count
            #expect(checks < 24, "\(checks) problem lines: the store is checked with backoff")

            try FileManager.default.moveItem(atPath: away, toPath: store)
            // The files are back as opened: seen on the directory event, not at the next check.
            try await f.waitForBoth("store.back", timeout: .seconds(5))
            // The problem goes with its cause: gone from both statuses within a backoff.
            try await f.waitForStatus("the store's problem cleared", timeout: .seconds(5)) { statuses in
                statuses.count == 2 && statuses.allSatisfy { !($0.problem ?? "").contains(store) }
            }
            #expect(f.events("host", "store.reopened").isEmpty)
            try await f.finishesWithEveryRecord()
            #expect(f.lockEpoch <= epoch + 2, "epoch \(epoch) went to \(f.lockEpoch)")
        }

        @Test("a store replaced by a valid copy is reopened and written again without a restart")
        func replacedByCopy() async throws {
            let f = try await CoordinatorFixture.hostAndWaitingExtension()
            let store = f.dir + "/store.sqlite"
            let copy = f.temp.path + "/copy.sqlite"
            // As a backup tool would: a consistent copy (SQLite's backup), put in place by rename.
            var readOnly = GRDB.Configuration()
            readOnly.readonly = true
            let source = try DatabaseQueue(path: store, configuration: readOnly)
            let destination = try DatabaseQueue(path: copy)
            try source.backup(to: destination)
            try destination.close()
            try source.close()
            #expect(rename(copy, store) == 0)
            try await f.waitForBoth("store.lost")
            let lost = try #require(f.events("host", "store.lost").first?["reason"]?.stringValue)
            #expect(lost.contains("replaced") && lost.contains(store), "\(lost)")
            try await f.waitForBoth("store.reopened")
            let reopened = try #require(f.events("ext", "store.reopened").first?["reason"]?.stringValue)
            #expect(reopened.contains(store), "\(reopened)")
            try await f.finishesWithEveryRecord()
        }

        @Test(
            "a write-ahead log deleted under the writer: it stops at once, names it, copies its commits back, and goes on"
        )
        func deletedLog() async throws {
            let f = try await CoordinatorFixture.hostAndWaitingExtension()
            let wal = f.dir + "/store.sqlite-wal"
            #expect(unlink(wal) == 0)
            try await f.waitForLog("host", "store.lost") { log in log.contains { $0["event"] == "store.lost" }
            }
            let lost = try #require(f.events("host", "store.lost").first)
            let reason = try #require(lost["reason"]?.stringValue)
            #expect(reason.contains("write-ahead log") && reason.contains(wal), "\(reason)")
            try await f.waitForLog("host", "the lease handed back") { log in
                log.contains { $0["event"] == "lease.released" && $0["reason"] == "store-lost" }
            }
            // At once: no page committed after the loss was seen.
            let log = f.log("host")
            let seen = try #require(log.firstIndex { $0["event"] == "store.lost" })
            let pagesAfter = log[seen...].filter { $0["event"] == "sync" && $0["status"] == "running" }
            let progress = Set(pagesAfter.compactMap { $0["progress"]?.intValue })
            #expect(progress.count <= 1, "pages committed after the loss: \(progress.sorted())")
            #expect(f.events("host", "store.copiedBack").first?["complete"] == true)
            try await f.waitForBoth("store.reopened")
            try await f.finishesWithEveryRecord()
        }

        @Test("a deleted store file is reported by name and no longer written; a new opener refuses its WAL")
        func deletedStoreFile() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 10])
            try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 200)
            try await f.waitForLog("host", "a few committed pages") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 5
            }
            try FileManager.default.removeItem(atPath: f.dir + "/store.sqlite")
            try await f.waitForLog("host", "store.lost") { log in log.contains { $0["event"] == "store.lost" }
            }
            let lost = try #require(f.events("host", "store.lost").first)
            #expect(lost["reason"]?.stringValue?.contains("deleted") == true)
            try await f.waitForLog("host", "the lease handed back") { log in
                log.contains { $0["event"] == "lease.released" && $0["reason"] == "store-lost" }
            }
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(status.stdout.contains("problem: host:"), "\(status.stdout)")
            // Nothing reports success on a store nobody else can see.
            #expect(!f.log("host").contains { $0["event"] == "sync" && $0["status"] == "done" })
            // A store opened fresh beside the old WAL would take its frames: refused, by name.
            let info = try await BatonProcess.run(["store", "info", "--dir", f.dir])
            #expect(info.status != 0)
            #expect(info.stderr.contains("store.sqlite-wal"), "\(info.stderr)")
            try await f.finish()
        }
    }
}
