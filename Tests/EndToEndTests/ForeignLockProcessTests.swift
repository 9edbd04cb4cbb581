import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    /// Lock files in D held by a process that is not Baton (`flock D/setup.lock …`, `flock
    /// D/writer.lock …`): commands fail within their timeout naming it, `status` names it, and a
    /// takeover says whom it took the lease from.
    @Suite("Foreign lock holders as processes", .serialized, .timeLimit(.minutes(3)))
    struct ForeignLockProcessTests {
        /// `/usr/bin/flock -o PATH cat`, once it holds the lock: `cat` echoes a line typed after
        /// the lock was taken, and ends (so the lock is let go) when its input is closed.
        func foreignHolder(of path: String) async throws -> BatonProcess {
            let holder = try await BatonProcess(
                ["-o", path, "cat"], executable: "/usr/bin/flock", interactive: true)
            holder.type("held")
            try await holder.waitForLine(containing: "held", timeout: .seconds(30))
            return holder
        }

        /// Lets the holder go and waits for it to end.
        func release(_ holder: BatonProcess) async throws {
            holder.closeInput()
            #expect(try await holder.wait(timeout: .seconds(30)).status == 0)
        }

        /// Runs `baton ARGS`; its result and how long it took.
        func timed(_ arguments: [String]) async throws -> (ProcessResult, Duration) {
            let clock = ContinuousClock()
            let started = clock.now
            let result = try await BatonProcess.run(arguments, timeout: .seconds(60))
            return (result, clock.now - started)
        }

        @Test(
            "a foreign setup.lock holder makes commands and a new participant fail within their timeout, naming it"
        )
        func setupLockHolder() async throws {
            let f = try await CoordinatorFixture(records: 0)
            #expect(try await BatonProcess.run(["store", "init", "--dir", f.dir]).status == 0)
            let path = f.dir + "/setup.lock"
            let holder = try await foreignHolder(of: path)
            let named = "\(path) is held by pid \(holder.pid) (/usr/bin/flock -o \(path) cat)"

            // A command with a timeout waits that long.
            let (create, createTook) = try await timed(
                ["store", "soup", "create", "--dir", f.dir, "accounts", "--timeout", "1"])
            #expect(create.status == 1)
            #expect(create.stderr.contains(named), "\(create.stderr)")
            #expect(createTook >= .seconds(1) && createTook < .seconds(8), "\(createTook)")
            let (wait, waitTook) = try await timed(["wait", "--dir", f.dir, "--no-writer", "--timeout", "1"])
            #expect(wait.status == 1)
            #expect(wait.stderr.contains(named), "\(wait.stderr)")
            #expect(waitTook >= .seconds(1) && waitTook < .seconds(8), "\(waitTook)")

            // status and a new participant wait the default 10 s (side by side).
            let participant = try await f.start("host", role: "host", lifecycle: "background", tracked: false)
            let (status, statusTook) = try await timed(["status", "--dir", f.dir])
            let refused = try await participant.wait(timeout: .seconds(60))
            #expect(status.status == 1)
            #expect(status.stderr.contains(named), "\(status.stderr)")
            #expect(statusTook >= .seconds(10) && statusTook < .seconds(20), "\(statusTook)")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains(named), "\(refused.stderr)")

            try await release(holder)
            let (after, afterTook) = try await timed(["status", "--dir", f.dir])
            #expect(after.status == 0, "\(after.stderr)")
            #expect(afterTook < .seconds(5), "\(afterTook)")
            try await f.finish()
        }

        @Test(
            "a foreign writer.lock holder is named in status, and the takeover from it names it, not the last holder"
        )
        func writerLockHolder() async throws {
            let f = try await CoordinatorFixture(records: 20)
            let host = try await f.start(
                "host", role: "host", lifecycle: "foreground", extra: ["--lease-term", "1"])
            #expect(try await f.wait(["--writer", "host"]))
            // The host lets go cleanly; then something that is not Baton locks writer.lock.
            try await f.signal("host", "background")
            #expect(try await f.wait(["--no-writer"]))
            let path = f.dir + "/writer.lock"
            let holder = try await foreignHolder(of: path)
            let command = "/usr/bin/flock -o \(path) cat"

            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("writer: none"))
            #expect(
                status.stdout.contains(
                    "problem: \(path) is held by pid \(holder.pid) (\(command)), which is not a Baton participant"
                ),
                "\(status.stdout)")
            let json = try JSONValue(
                parsing: try await BatonProcess.run(["status", "--dir", f.dir, "--json"]).stdout)
            let foreign = json.value(atPath: "foreignWriterLockHolders")?.arrayValue?.first
            #expect(foreign?.value(atPath: "pid")?.intValue == Int64(holder.pid))
            #expect(foreign?.value(atPath: "command")?.stringValue == command)

            // In the foreground again, the host finds the lock held and nobody beating: it takes
            // the lease over after a term, from the flock process (the record says the host let go).
            try await f.signal("host", "foreground")
            try await f.waitForLog("host", "a takeover") { log in
                log.contains { $0["event"] == "lease.takeover" }
            }
            let takeover = try #require(f.log("host").first { $0["event"] == "lease.takeover" })
            #expect(takeover["holderPid"]?.intValue == Int64(holder.pid), "\(takeover)")
            #expect(takeover["holder"]?.stringValue == "pid \(holder.pid) (\(command))", "\(takeover)")
            // What the lock file's record said: the host, which had let go.
            let record = takeover["record"]
            #expect(record?.value(atPath: "holder") == "host", "\(takeover)")
            #expect(record?.value(atPath: "pid")?.intValue == Int64(host.pid), "\(takeover)")
            #expect(record?.value(atPath: "released") == true, "\(takeover)")
            #expect(try await f.wait(["--writer", "host"]))
            // The lock file in place now is the host's: nobody foreign holds it.
            let after = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(!after.stdout.contains("not a Baton participant"), "\(after.stdout)")

            try await release(holder)
            try await f.finish()
        }

        @Test("a name held by a process that is not its participant: already running names that process")
        func nameLockHolder() async throws {
            let f = try await CoordinatorFixture(records: 0)
            try FileManager.default.createDirectory(
                atPath: f.dir + "/participants", withIntermediateDirectories: true)
            let path = f.dir + "/participants/host.lock"
            let holder = try await foreignHolder(of: path)
            let participant = try await f.start("host", role: "host", lifecycle: "background", tracked: false)
            let refused = try await participant.wait(timeout: .seconds(30))
            #expect(refused.status == 1)
            #expect(
                refused.stderr.contains(
                    "participant 'host' is already running (pid \(holder.pid) (/usr/bin/flock -o \(path) cat), though its lock file records no pid)"
                ), "\(refused.stderr)")
            try await release(holder)
            try await f.finish()
        }
    }
}
