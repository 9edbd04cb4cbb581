import BatonCoordinator
import BatonJSON
import BatonLocking
import BatonREST
import BatonStore
import Foundation
import Logging
import Testing

/// A continuation resumed by whichever answer comes first; later ones are dropped.
final class FirstAnswer: Sendable {
    private let continuation = Locked<CheckedContinuation<Bool, Never>?>(nil)

    func set(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func settle(_ value: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}

extension CoordinatorFixture {
    /// True once the server has received request `count + 1`; false if the host's sync is
    /// `done` first. Whichever comes first answers; the log side is bounded by
    /// ``waitForLog``'s timeout (a timeout fails the test).
    func nextRequestOrDone(after count: Int) async throws -> Bool {
        let server = self.server.server
        let answer = FirstAnswer()
        return await withCheckedContinuation { continuation in
            answer.set(continuation)
            // A request that never comes leaves this task parked until the server stops.
            Task {
                await server.waitForRequests(count + 1)
                answer.settle(true)
            }
            Task { [self] in
                try? await waitForLog("host", "the next request or the sync done", timeout: .seconds(120)) {
                    log in
                    log.last { $0["event"] == "sync" }?["status"] == "done"
                }
                answer.settle(server.requestCount > count)
            }
        }
    }

    /// The server ids missing from the store, and the store's records that are not on the server.
    func compareStoreWithServer() async throws -> (missing: Int, extra: Int, local: Int) {
        var quiet = Logger(label: "test.store")
        quiet.logLevel = .critical
        let store = try SharedStore.open(
            directory: try SharedDirectory(path: dir, create: false), create: false, logger: quiet)
        defer { try? store.close() }
        let local = try store.query(.all, in: "accounts").compactMap { $0.record["Id"]?.stringValue }
        let server = Set(try await client.adminRecords(type: "Account").compactMap { $0["Id"]?.stringValue })
        let localSet = Set(local)
        return (server.subtracting(localSet).count, localSet.subtracting(server).count, local.count)
    }

    func events(_ name: String, _ event: String) -> [JSONObject] {
        log(name).filter { $0["event"]?.stringValue == event }
    }

    /// A fixture of `records` accounts, each request answered after 30 ms, and a host syncing
    /// them in the foreground in pages of 1,000, with `extra` options.
    static func pacedHost(records: Int, extra: [String]) async throws -> CoordinatorFixture {
        let f = try await CoordinatorFixture(records: records)
        try await f.client.adminSetFaults(["latencyMs": 30])
        try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 1000, extra: extra)
        return f
    }
}

extension HeavyEndToEnd {
    /// The three ways a release build lost records (issue: "never lose a page"), each as a user
    /// ran them, plus the wedges around them.
    @Suite("Storage faults under running participants", .serialized)
    struct StorageFaultProcessTests {
        @Test("a tiny stop deadline interrupts page saves six times over; every record arrives")
        func tinyStopDeadline() async throws {
            // Paced, so the host cannot save several pages between two of the steps below: on a
            // quiet machine it used to finish its 10 pages before the third flip.
            let f = try await CoordinatorFixture.pacedHost(
                records: 20_000, extra: ["--stop-deadline", "0.001"])
            var flips = 0
            while flips < 6 {
                #expect(try await f.wait(["--writer", "host"]))
                let seen = f.events("host", "sync").count
                try await f.waitForLog("host", "a saved page") { log in
                    log.filter { $0["event"] == "sync" }.dropFirst(seen).contains {
                        ($0["status"] == "running" && ($0["progress"]?.intValue ?? 0) > 0)
                            || $0["status"] == "done"
                    }
                }
                if f.events("host", "sync").last?["status"] == "done" { break }
                // The next page's save waits for SQLite's lock, held from outside (as a shell's
                // BEGIN IMMEDIATE would), while the host goes to the background: its 1 ms stop
                // deadline passes mid-save. The lock is let go right then, so the `stopped`
                // state commits; it must not cover the page that rolled back.
                let lock = try ForeignWriteLock(path: f.dir + "/store.sqlite")
                let requests = f.server.server.requestCount
                // The next fetch starts once the save has begun; the last page has no next
                // fetch, so its save may finish first (the sync is done, nothing to interrupt).
                guard try await f.nextRequestOrDone(after: requests) else {
                    lock.release()
                    break
                }
                let deadlines = f.events("host", "stop.deadline").count
                let shared = try SharedDirectory(path: f.dir, create: false)
                try LifecycleSignal.write(.background, directory: shared, name: "host")
                try await f.waitForLog("host", "the stop deadline") { log in
                    log.filter { $0["event"] == "stop.deadline" }.count > deadlines
                }
                lock.release()
                #expect(try await f.wait(["--no-writer"]))
                try LifecycleSignal.write(.foreground, directory: shared, name: "host")
                flips += 1
            }
            #expect(flips >= 3, "only \(flips) flips before the sync was done")
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let (missing, extra, local) = try await f.compareStoreWithServer()
            #expect(
                missing == 0 && extra == 0 && local == 20_000, "missing \(missing), extra \(extra), \(local)")
            try await f.finish(lockedExpected: true)
            let check = try await BatonProcess.run(["lease", "check", "--dir", f.dir, "--strict"])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }

        @Test("with a save grace of 0, a stop ends the page save it waits for at once; every record arrives")
        func saveGraceZero() async throws {
            // A stop deadline far past the test: the page ends by the grace, never by an interrupt.
            let f = try await CoordinatorFixture.pacedHost(
                records: 5_000, extra: ["--save-grace", "0", "--stop-deadline", "60"])
            #expect(try await f.wait(["--writer", "host"]))
            try await f.waitForLog("host", "a saved page") { log in
                log.contains {
                    $0["event"] == "sync" && $0["status"] == "running" && ($0["progress"]?.intValue ?? 0) > 0
                }
            }
            // The next page's save waits for SQLite's lock, held from outside, when the host
            // goes to the background; the lock is let go once the stop has ended that save.
            let lock = try ForeignWriteLock(path: f.dir + "/store.sqlite")
            let requests = f.server.server.requestCount
            guard try await f.nextRequestOrDone(after: requests) else {
                lock.release()
                Issue.record("the sync finished before a page save could be held")
                return
            }
            let saved = f.events("host", "sync").last { ($0["progress"]?.intValue ?? 0) > 0 }?["progress"]
            try await f.signal("host", "background")
            try await f.waitForLog("host", "the page save ended by the grace") { log in
                log.contains { $0["event"] == "stop.grace" }
            }
            lock.release()
            #expect(try await f.wait(["--no-writer"]))
            #expect(f.events("host", "stop.deadline").isEmpty)
            // Nothing of the page cut before its first record: the sync stopped where it was.
            let stopped = f.events("host", "sync").last
            #expect(stopped?["status"] == "stopped")
            #expect(stopped?["progress"] == saved)
            try await f.signal("host", "foreground")
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let (missing, extra, local) = try await f.compareStoreWithServer()
            #expect(
                missing == 0 && extra == 0 && local == 5_000, "missing \(missing), extra \(extra), \(local)")
            try await f.finish()
            let check = try await BatonProcess.run(["lease", "check", "--dir", f.dir, "--strict"])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }

        @Test("a full disk fails page commits for a while; the participant retries and finishes by itself")
        func fullDisk() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 10])
            let faultFile = f.temp.path + "/disk-full"
            try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 500,
                extra: ["--storage-fault-file", faultFile, "--retry-delay", "0.1"])
            try await f.waitForLog("host", "a few committed pages") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 20
            }
            // A real SQLITE_FULL: pages of records no longer fit, a sync's state still does.
            try Data("disk-full\n".utf8).write(to: URL(fileURLWithPath: faultFile))
            // The outage lasts past several retries.
            try await f.waitForLog("host", "a third retry") { log in
                log.contains { $0["event"] == "sync.retry" && ($0["attempt"]?.intValue ?? 0) >= 3 }
            }
            let failed = f.log("host").filter { $0["event"] == "sync" && $0["status"] == "failed" }
            #expect(!failed.isEmpty)
            try FileManager.default.removeItem(atPath: faultFile)
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let (missing, extra, local) = try await f.compareStoreWithServer()
            #expect(
                missing == 0 && extra == 0 && local == 20_000, "missing \(missing), extra \(extra), \(local)")
            try await f.finish()
        }

        @Test("another process holds SQLite's write lock past the busy timeout; no record is lost")
        func foreignLockPastBusyTimeout() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 5])
            let host = try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 200,
                extra: ["--busy-timeout", "2", "--retry-delay", "0.1"])
            try await f.waitForLog("host", "a few committed pages") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 10
            }
            let lock = try ForeignWriteLock(path: f.dir + "/store.sqlite")
            // Held past the busy timeout, until a page's save has failed on it; released then,
            // so the write of the sync's failure lands (as when a shell's lock outlives the busy
            // timeout by a little): what it persists must not cover the page that failed.
            try await host.waitForOutput("the writer's sync failing on the lock") { _, err in
                err.contains("sync failed")
            }
            lock.release()
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let (missing, extra, local) = try await f.compareStoreWithServer()
            #expect(
                missing == 0 && extra == 0 && local == 20_000, "missing \(missing), extra \(extra), \(local)")
            try await f.finish(lockedExpected: true)
        }

        @Test(
            "a stop under a foreign lock releases within its deadline plus 1 s; a peer that cannot write yet retries"
        )
        func stopAndHandOverUnderForeignLock() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 5])
            try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 200,
                extra: ["--stop-deadline", "1", "--busy-timeout", "10"])
            try await f.waitForLog("host", "a few committed pages") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 10
            }
            try await f.start(
                "ext", role: "extension", lifecycle: "foreground", batchSize: 200,
                extra: ["--busy-timeout", "0.3", "--retry-delay", "0.1"])
            #expect(try await f.wait(["--lifecycle", "ext=foreground"]))
            let lock = try ForeignWriteLock(path: f.dir + "/store.sqlite")
            try await f.signal("host", "background")
            try await f.waitForLog("host", "the lease released") { log in
                log.contains { $0["event"] == "lease.released" }
            }
            let released = try #require(f.events("host", "lease.released").first)
            let releaseMs = released["releaseMs"]?.doubleValue ?? .infinity
            #expect(releaseMs <= 1_000 + 1_000, "released after \(releaseMs) ms")
            // The extension gets the lease, but its first write (which records the lease) cannot
            // land while the store is locked: it says so and keeps trying.
            try await f.waitForLog("ext", "a failed first write") { log in
                log.contains { $0["event"] == "writer.error" }
            }
            try await f.waitForStatus("ext to publish its problem") { statuses in
                statuses.contains {
                    $0.name == "ext" && $0.problem?.contains("could not start syncs") == true
                }
            }
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(
                status.stdout.contains("problem: ext: could not start syncs as writer"), "\(status.stdout)")
            lock.release()
            #expect(try await f.wait(["--writer", "ext"]))
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let (missing, extra, local) = try await f.compareStoreWithServer()
            #expect(
                missing == 0 && extra == 0 && local == 20_000, "missing \(missing), extra \(extra), \(local)")
            try await f.finish(lockedExpected: true)
            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }
    }
}
