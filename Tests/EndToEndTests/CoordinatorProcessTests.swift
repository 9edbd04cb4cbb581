import BatonJSON
import BatonREST
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("Paired participants as processes", .serialized)
    struct CoordinatorProcessTests {
        @Test(
            "SIGTERM, or SIGHUP as a shell exiting with the participant stopped sends it (then SIGCONT), through the service group: the syncs stop, the lease is released, then the process exits 0",
            arguments: [SIGTERM, SIGHUP])
        func sigtermReleasesFirst(signal: Int32) async throws {
            let f = try await CoordinatorFixture(records: 5_000)
            try await f.client.adminSetFaults(["latencyMs": 20])
            let host = try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 200)
            #expect(try await f.wait(["--writer", "host"]))
            try await f.waitForLog("host", "a committed page") { log in
                (log.last { $0["event"] == "sync" }?["progress"]?.intValue ?? 0) > 0
            }
            if signal == SIGHUP {
                await host.send(SIGSTOP)
                await host.send(SIGHUP)
                await host.send(SIGCONT)
            } else {
                await host.send(signal)
            }
            let result = try await host.wait(timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            let events = f.log("host").compactMap { $0["event"]?.stringValue }
            let released = try #require(events.firstIndex(of: "lease.released"))
            let exited = try #require(events.firstIndex(of: "exited"))
            #expect(events.firstIndex(of: "stop.requested") ?? .max < released && released < exited)
            #expect(f.log("host").contains { $0["event"] == "lease.released" && $0["reason"] == "shutdown" })
            #expect(
                f.log("host").last { $0["event"] == "sync" }?["status"] == "stopped",
                "the sync under way ends stopped, resumable")
            let status = try await BatonProcess.run(["status", "--dir", f.dir, "--json"])
            #expect(status.stdout.contains("\"phase\":\"finished\""), "\(status.stdout)")
            try await f.finish()
        }

        @Test(
            "hand-over mid-sync: the host stops and releases, the extension resumes to done",
            arguments: ["baton signal", "echo"])
        func pairedHandOver(signalling: String) async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 20])
            try await f.start("host", role: "host", lifecycle: "foreground")
            #expect(try await f.wait(["--writer", "host"]))
            try await f.start("ext", role: "extension", lifecycle: "foreground")
            // Mid-way: a few pages are in.
            await f.server.server.waitForRequests(f.server.server.requestCount + 4)
            if signalling == "echo" {
                let shell = try await BatonProcess(
                    ["-c", "echo background > '\(f.dir)/lifecycle/host'"], executable: "/bin/sh")
                #expect(try await shell.wait().status == 0)
            } else {
                try await f.signal("host", "background")
            }
            #expect(try await f.wait(["--writer", "ext"]))
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))

            let hostLog = f.log("host")
            #expect(hostLog.contains { $0["event"] == "sync" && $0["status"] == "stopped" })
            #expect(hostLog.contains { $0["event"] == "lease.released" && $0["reason"] == "background" })
            let extLog = f.log("ext")
            #expect(
                extLog.contains {
                    $0["event"] == "manager.restarted" && ($0["resumed"]?.arrayValue?.isEmpty == false)
                })

            let info = try await f.storeInfo()
            #expect(info.value(atPath: "integrity") == "ok")
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 20_000)
            let served = try await f.served()
            // At most the page in flight is fetched twice, plus the record(s) sharing the boundary
            // time stamp, which a resume after a stop asks for again (>= maxTimeStamp).
            #expect(served <= 20_000 + 500 + 1, "served \(served)")
            let state = try #require(try await f.syncState("accounts"))
            #expect(state.value(atPath: "status") == "done")
            try await f.finish()
            #expect(try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir]).status == 0)
        }

        @Test("writer killed with SIGKILL mid-sync: the peer takes over, recovers and finishes")
        func killedWriter() async throws {
            let f = try await CoordinatorFixture(records: 20_000)
            try await f.client.adminSetFaults(["latencyMs": 20])
            let host = try await f.start("host", role: "host", lifecycle: "foreground")
            #expect(try await f.wait(["--writer", "host"]))
            try await f.start("ext", role: "extension", lifecycle: "foreground")
            await f.server.server.waitForRequests(f.server.server.requestCount + 4)
            await host.send(SIGKILL)
            _ = try await host.wait()
            #expect(try await f.wait(["--writer", "ext"]))
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))

            let extLog = f.log("ext")
            #expect(extLog.contains { $0["event"] == "syncs.recovered" })
            let statuses = extLog.filter { $0["event"] == "sync" }.compactMap { $0["status"]?.stringValue }
            #expect(statuses.first == "stopped")
            #expect(statuses.contains("running"))
            #expect(statuses.last == "done")
            let info = try await f.storeInfo()
            #expect(info.value(atPath: "integrity") == "ok")
            #expect(info.value(atPath: "soups")?.arrayValue?.first?.value(atPath: "count") == 20_000)
            try await f.finish()
            let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", f.dir])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
            let history = try await BatonProcess.run(["lease", "history", "--dir", f.dir, "--json"])
            let kinds = (try JSONValue(parsing: history.stdout).arrayValue ?? []).compactMap {
                $0.value(atPath: "releaseKind")?.stringValue
            }
            #expect(kinds.first == "taken-over")
        }

        @Test("priority: a host coming to the foreground takes the lease from the extension")
        func priorityYield() async throws {
            let f = try await CoordinatorFixture(records: 5_000)
            try await f.client.adminSetFaults(["latencyMs": 30])
            try await f.start("ext", role: "extension", lifecycle: "foreground", batchSize: 200)
            #expect(try await f.wait(["--writer", "ext"]))
            try await f.start("host", role: "host", lifecycle: "background", batchSize: 200)
            #expect(try await f.wait(["--lifecycle", "host=background"]))
            try await f.signal("host", "foreground")
            #expect(try await f.wait(["--writer", "host"]))
            let status = try await BatonProcess.run(["status", "--dir", f.dir, "--json"])
            let parsed = try JSONValue(parsing: status.stdout)
            #expect(parsed.value(atPath: "writer.name") == "host")
            let ext = parsed.value(atPath: "participants")?.arrayValue?.first {
                $0.value(atPath: "name") == "ext"
            }
            #expect(ext?.value(atPath: "phase") == "waiting")
            #expect(f.log("ext").contains { $0["event"] == "lease.released" && $0["reason"] == "yield" })
            #expect(try await f.wait(["--sync", "accounts=done"], timeout: 120))
            try await f.finish()
        }

        @Test(
            "junk signals, unknown names, a symlink, a 1 MiB file and a recreated lifecycle directory are survived"
        )
        func badInput() async throws {
            let f = try await CoordinatorFixture(records: 100)
            let host = try await f.start("host", role: "host", lifecycle: "background")
            let ext = try await f.start("ext", role: "extension", lifecycle: "background")
            #expect(try await f.wait(["--lifecycle", "ext=background"]))
            #expect(try await f.wait(["--lifecycle", "host=background"]))
            let lifecycle = f.dir + "/lifecycle"
            try Data("sideways\n".utf8).write(to: URL(fileURLWithPath: lifecycle + "/host"))
            try Data("foreground".utf8).write(to: URL(fileURLWithPath: lifecycle + "/nobody"))
            try Data(repeating: 0x66, count: 1 << 20).write(to: URL(fileURLWithPath: lifecycle + "/ext"))
            try Data("foreground".utf8).write(to: URL(fileURLWithPath: f.temp.path + "/elsewhere"))
            try FileManager.default.removeItem(atPath: lifecycle + "/ext")
            try FileManager.default.createSymbolicLink(
                atPath: lifecycle + "/ext", withDestinationPath: f.temp.path + "/elsewhere")
            try FileManager.default.removeItem(atPath: lifecycle)
            try FileManager.default.createDirectory(atPath: lifecycle, withIntermediateDirectories: false)
            // Still alive, and still obeying the next valid signal.
            try await f.signal("host", "foreground")
            #expect(try await f.wait(["--writer", "host"]))
            #expect(host.isRunning && ext.isRunning)
            let warnings = f.log("host").filter {
                $0["event"] == "lifecycle.ignored" || $0["event"] == "rescan"
            }
            #expect(!warnings.isEmpty)
            #expect(host.stderr.contains("warning"))
            try await f.finish()
        }

        @Test("a stop while the server holds a request for 10 s releases the lease long before")
        func stopWithHeldRequest() async throws {
            let f = try await CoordinatorFixture(records: 2_000)
            // Every data request is held 10 s from the start, so the host's first page is in
            // flight whatever the machine's speed (set after the host began, a fast host could
            // finish its sync first and leave nothing to hold).
            try await f.client.adminSetFaults(["latencyMs": 10_000])
            let held = f.server.server.requestCount + 1
            // A stop deadline far past the wait below: a release within it comes from the stop
            // cancelling the held request, not from the deadline's interrupt.
            try await f.start(
                "host", role: "host", lifecycle: "foreground", batchSize: 100,
                extra: ["--stop-deadline", "60"])
            #expect(try await f.wait(["--writer", "host"]))
            await f.server.server.waitForRequests(held)
            try await f.signal("host", "background")
            // Bounded well under the 10 s the server holds the request.
            #expect(try await f.wait(["--no-writer"], timeout: 5))
            let stopped = f.log("host").first { $0["event"] == "stopped" }
            #expect((stopped?["stopMs"]?.doubleValue ?? 1e9) < 5_000)
            #expect(!f.log("host").contains { $0["event"] == "stop.deadline" })
            try await f.client.adminClearFaults()
            try await f.finish()
        }
    }
}
