import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    /// `baton wait` on lease events, as a shell script uses it around real participants: a
    /// release on a hand-over, a takeover of a frozen holder, an epoch reached.
    @Suite("baton wait: lease events between processes", .serialized, .timeLimit(.minutes(5)))
    struct LeaseWaitProcessTests {
        /// The writer's epoch, as `baton status --json` shows it.
        func writerEpoch(_ f: CoordinatorFixture) async throws -> Int64 {
            let status = try await BatonProcess.run(["status", "--dir", f.dir, "--json"])
            let epoch = try JSONValue(parsing: status.stdout).value(atPath: "writer.epoch")?.intValue
            return try #require(epoch, "no writer epoch in \(status.stdout)")
        }

        /// `baton wait ARGS` in `f`'s directory: its exit status.
        func wait(_ f: CoordinatorFixture, _ arguments: [String], timeout: String = "60") async throws
            -> Int32
        {
            let result = try await BatonProcess.run(
                ["wait", "--dir", f.dir] + arguments + ["--timeout", timeout])
            #expect(!result.stderr.contains("usage"), "\(result.stderr)")
            return result.status
        }

        @Test(
            "--release on a hand-over, --takeover of a frozen writer, --epoch: each exits 0 on its event and 2 without it"
        )
        func leaseEvents() async throws {
            let f = try await CoordinatorFixture(records: 50)
            let host = try await f.start(
                "host", role: "host", lifecycle: "foreground", extra: ["--lease-term", "1"])
            #expect(try await f.wait(["--writer", "host"]))
            let ext = try await f.start(
                "ext", role: "extension", lifecycle: "background", extra: ["--lease-term", "1"])
            let first = try await writerEpoch(f)
            #expect(try await wait(f, ["--epoch", String(first)]) == 0)
            #expect(try await wait(f, ["--epoch", String(first + 1)], timeout: "0.3") == 2)
            // Nothing was released or taken over since the host took the lease.
            #expect(try await wait(f, ["--release", "--from", String(first)], timeout: "0.3") == 2)
            #expect(try await wait(f, ["--takeover", "--from", String(first)], timeout: "0.3") == 2)

            // A hand-over: the host lets go cleanly (a release, not a takeover).
            let released = Task { try await wait(f, ["--release", "--from", String(first)]) }
            try await f.signal("ext", "foreground")
            try await f.signal("host", "background")
            #expect(try await released.value == 0)
            #expect(try await f.wait(["--writer", "ext"]))
            #expect(try await wait(f, ["--epoch", String(first + 1)]) == 0)
            #expect(try await wait(f, ["--takeover", "--from", String(first)], timeout: "0.3") == 2)

            // The extension, now the writer, freezes; the host in the foreground takes over.
            let second = try await writerEpoch(f)
            let takenOver = Task { try await wait(f, ["--takeover", "--from", String(second)]) }
            // Frozen first: a running writer would yield to the host's higher priority cleanly.
            await ext.send(SIGSTOP)
            try await f.signal("host", "foreground")
            #expect(try await takenOver.value == 0)
            #expect(try await f.wait(["--writer", "host"]))
            await ext.send(SIGCONT)
            _ = host
            try await f.finish()
        }
    }
}
