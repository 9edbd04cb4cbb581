import BatonCoordinator
import BatonJSON
import BatonStore
import Foundation
import Testing

extension HeavyEndToEnd {
    /// A writer frozen with SIGSTOP (as Android's freezer or `docker pause` would) while a peer
    /// waits: the peer takes the lease over after one term, finishes the sync, and the frozen
    /// process, once thawed, commits nothing and comes back as a normal participant.
    @Suite("Frozen writers as processes", .serialized, .timeLimit(.minutes(5)))
    struct TakeoverProcessTests {
        /// The lease history and the commit log, audited strictly: no commit ever carried a
        /// fenced epoch after its takeover, and every commit came from the holder of its time.
        func expectStrictAudit(_ f: CoordinatorFixture) async throws {
            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }

        @Test(
            "SIGSTOP of the writer mid-sync: the peer takes over within the term and finishes; the thawed writer is fenced"
        )
        func frozenWriter() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            // About 100 pages of 200, 50 ms each: the sync is well under way when the host freezes.
            try await f.client.adminSetFaults(["latencyMs": 50])
            let host = try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 200, extra: ["--lease-term", "1"])
            #expect(try await f.wait(["--writer", "host"]))
            try await f.start(
                "ext", role: "extension", lifecycle: "foreground", batchSize: 200,
                extra: ["--lease-term", "1"])
            try await f.waitForStatus("ext waiting") { $0.contains { $0.name == "ext" && $0.isWaiting } }
            try await f.waitForLog("host", "a few committed pages") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 10
            }
            // Frozen between pages, never inside a page's write transaction (the next test): the
            // next page's request is held 5 s, and SIGSTOP goes once SQLite's write lock is free.
            try await f.client.adminSetFaults(["latencyMs": 5_000])
            await f.server.server.waitForRequests(f.server.server.requestCount + 1)
            let storePath = f.dir + "/store.sqlite"
            let unlocked = ContinuousClock.now + .seconds(30)
            while try ForeignWriteLock.isHeld(path: storePath), ContinuousClock.now < unlocked {
                try await Task.sleep(for: .milliseconds(5))  // wait-ok: polling the write lock, bounded
            }
            #expect(try !ForeignWriteLock.isHeld(path: storePath))
            await host.send(SIGSTOP)
            try await f.client.adminSetFaults(["latencyMs": 50])
            #expect(try await f.wait(["--writer", "ext"], timeout: 30))
            let takeover = try #require(f.log("ext").first { $0["event"] == "lease.takeover" })
            #expect(takeover["holder"] == "host")
            #expect(takeover["holderState"] == "stopped")
            // The frozen host shows as stopped in `baton status`.
            let status = try await BatonProcess.run(["status", "--dir", f.dir, "--json"])
            let hostStatus = try JSONValue(parsing: status.stdout).value(atPath: "participants")?.arrayValue?
                .first { $0.value(atPath: "name") == "host" }
            #expect(hostStatus?.value(atPath: "liveness") == "stopped")
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let extLog = f.log("ext")
            #expect(extLog.contains { $0["event"] == "syncs.recovered" })

            await host.send(SIGCONT)
            try await f.waitForLog("host", "the fenced release") { log in
                log.contains { $0["event"] == "lease.released" && $0["reason"] == "fenced" }
            }
            // It comes back as a normal participant: foreground, waiting for the lease.
            try await f.waitForStatus("host waiting again") { statuses in
                statuses.contains { $0.name == "host" && $0.isWaiting }
            }
            let hostLog = f.log("host")
            let lost = try #require(hostLog.firstIndex { $0["event"] == "lease.lost" })
            // After the loss, its syncs end stopped (resumable) and it records no release.
            #expect(!hostLog[lost...].contains { $0["event"] == "sync" && $0["status"] == "failed" })
            #expect(hostLog[lost...].contains { $0["event"] == "lease.released" && $0["reason"] == "fenced" })

            let info = try await f.storeInfo()
            #expect(info.value(atPath: "integrity") == "ok")
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 20_000)
            try await f.finish()
            try await expectStrictAudit(f)
            let history = try await BatonProcess.run(["lease", "history", "--dir", f.dir, "--json"])
            let intervals = try JSONValue(parsing: history.stdout).arrayValue ?? []
            #expect(
                intervals.contains {
                    $0.value(atPath: "name") == "host" && $0.value(atPath: "releaseKind") == "taken-over"
                })
        }

        @Test(
            "a writer frozen inside a write transaction is named with its remedy; the takeover completes after SIGCONT"
        )
        func frozenInsideTransaction() async throws {
            let (f, host) = try await Self.stopHostInTransaction(extFlags: ["--frozen-holder", "wait"])
            try await f.waitForLog("ext", "the named diagnosis") { log in
                log.contains { $0["event"] == "lease.blocked" }
            }
            let blocked = try #require(f.log("ext").first { $0["event"] == "lease.blocked" })
            let problem = blocked["problem"]?.stringValue ?? ""
            #expect(problem.contains("host (pid \(host.pid)) is stopped inside a write transaction"))
            #expect(problem.contains("kill"))
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(status.stdout.contains("stopped inside a write transaction"), "\(status.stdout)")
            // Nobody could write meanwhile: the host still holds the lease in the store.
            #expect(!f.log("ext").contains { $0["event"] == "lease.acquired" })

            await host.send(SIGCONT)
            // The takeover completes once the host's transaction commits; the host, fenced,
            // waits again, and (having the higher priority) gets the lease back from ext.
            try await f.waitForLog("ext", "the takeover") { log in
                log.contains { $0["event"] == "lease.takeover" }
            }
            try await f.waitForLog("host", "the fenced release") { log in
                log.contains { $0["event"] == "lease.released" && $0["reason"] == "fenced" }
            }
            let hostLog = f.log("host")
            let lost = try #require(hostLog.firstIndex { $0["event"] == "lease.lost" })
            #expect(!hostLog.contains { $0["event"] == "sync" && $0["status"] == "failed" })
            #expect(hostLog[lost...].contains { $0["event"] == "lease.released" && $0["reason"] == "fenced" })
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let info = try await f.storeInfo()
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 20_000)
            try await f.finish()
            try await expectStrictAudit(f)
        }

        /// How a writer is frozen inside its page transaction.
        enum Freeze: String, CaseIterable, Sendable {
            /// SIGSTOP (it stops itself inside the transaction).
            case sigstop
            /// The v1 cgroup freezer: stopped inside the transaction, moved into a freezer cgroup
            /// that is frozen, then sent SIGCONT (the freezer keeps it from running).
            case cgroupFreezer
        }

        static var freezerWritable: Bool { access(FreezerMount.path, W_OK) == 0 }

        static var policyCases: [(String, Freeze)] {
            ["thaw", "kill"].flatMap { policy in
                Freeze.allCases.filter { $0 == .sigstop || freezerWritable }.map { (policy, $0) }
            }
        }

        @Test(
            "thaw or kill: a writer frozen inside a page transaction no longer wedges the store; the peer writes, the audit passes, the store equals the server",
            arguments: policyCases)
        func frozenHolderPolicy(_ policy: String, _ freeze: Freeze) async throws {
            let (f, host) = try await Self.stopHostInTransaction(
                extFlags: ["--frozen-holder", policy, "--frozen-bound", "1"])
            var cgroup: String?
            if freeze == .cgroupFreezer {
                try await waitForState(host.pid, "T")
                let path = FreezerMount.path + "/baton-test-\(host.pid)"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                cgroup = path
                try Data("\(host.pid)\n".utf8).write(to: URL(fileURLWithPath: path + "/cgroup.procs"))
                try Data("FROZEN\n".utf8).write(to: URL(fileURLWithPath: path + "/freezer.state"))
                await host.send(SIGCONT)
                // Frozen by the cgroup now, not stopped: the kernel shows it in uninterruptible sleep.
                try await waitForState(host.pid, "D")
            }
            defer {
                if let cgroup {
                    // Thawed and emptied, so the directory can go (a test left behind must not).
                    // Gone already: nothing to thaw.
                    try? Data("THAWED\n".utf8).write(to: URL(fileURLWithPath: cgroup + "/freezer.state"))
                    rmdir(cgroup)
                }
            }
            // The peer acts once the bound has passed, says so, and gets the lease: by the
            // takeover, or (a killed holder's lock freed by the kernel) granted.
            try await f.waitForLog("ext", "the policy acting") { log in
                log.contains { ($0["problem"]?.stringValue ?? "").contains("policy \(policy):") }
            }
            try await f.waitForLog("ext", "the lease") { log in
                log.contains { $0["event"] == "lease.takeover" || $0["event"] == "lease.acquired" }
            }
            if policy == "kill" {
                let result = try await host.wait(timeout: .seconds(30))
                #expect(result.status != 0, "the host was killed")
            } else {
                try await f.waitForLog("host", "the fenced release") { log in
                    log.contains { $0["event"] == "lease.released" && $0["reason"] == "fenced" }
                }
            }
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            let info = try await f.storeInfo()
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 20_000)
            try await f.finish()
            try await expectStrictAudit(f)
        }

        /// A host syncing 20,000 records (about 100 pages of 200, 50 ms each) with `ext` waiting
        /// in the foreground (lease term 1 s, with `extFlags`), told to stop itself (SIGSTOP)
        /// inside its next page's write transaction once a few pages are in.
        static func stopHostInTransaction(extFlags: [String]) async throws -> (
            CoordinatorFixture, BatonProcess
        ) {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 50])
            let faultFile = f.temp.path + "/fault"
            let host = try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 200,
                extra: ["--lease-term", "1", "--storage-fault-file", faultFile])
            #expect(try await f.wait(["--writer", "host"]))
            try await f.start(
                "ext", role: "extension", lifecycle: "foreground", batchSize: 200,
                extra: ["--lease-term", "1"] + extFlags)
            try await f.waitForStatus("ext waiting") { $0.contains { $0.name == "ext" && $0.isWaiting } }
            try await f.waitForLog("host", "a committed page") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) >= 5
            }
            try Data("stop-in-transaction\n".utf8).write(
                to: URL(fileURLWithPath: faultFile), options: .atomic)
            return (f, host)
        }

        /// Waits until the kernel shows `pid` in `state` (the third field of /proc/PID/stat).
        func waitForState(_ pid: Int32, _ state: String) async throws {
            for _ in 0..<1_000 {
                // Gone: not in the state yet.
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                if let close = stat.lastIndex(of: ")"),
                    stat[stat.index(after: close)...].dropFirst().hasPrefix(state)
                {
                    return
                }
                try await Task.sleep(for: .milliseconds(10))  // wait-ok: polls /proc, which has no event
            }
            Issue.record("pid \(pid) never showed state \(state)")
        }
    }
}

/// Where the v1 cgroup freezer is mounted.
enum FreezerMount {
    static let path = "/sys/fs/cgroup/freezer"
}
