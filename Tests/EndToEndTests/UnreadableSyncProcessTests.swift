import BatonCoordinator
import BatonJSON
import BatonStore
import BatonTestSupport
import Foundation
import GRDB
import Logging
import Testing

/// Runs SQL on the store of `dir` from a connection of its own, as a user who got past the write
/// guard would (`sqlite3` alone is refused: `ForeignWriteTests`).
func storeSQL(_ dir: String, _ sql: String, _ arguments: StatementArguments = []) throws {
    var configuration = Configuration()
    configuration.busyMode = .timeout(10)
    configuration.prepareDatabase { try WriteGuards.register(on: $0) }
    let queue = try DatabaseQueue(path: dir + "/store.sqlite", configuration: configuration)
    try queue.write { try $0.execute(sql: sql, arguments: arguments) }
}

@Suite("Syncs that cannot be read, listed")
struct UnreadableSyncListingTests {
    @Test("baton syncs and baton status list a sync that cannot be read with what is wrong, and exit 0")
    func listed() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        try await unfenced.write { transaction in
            for (name, status) in [("accounts", "done"), ("odd", "running"), ("sideways", "stopped")] {
                _ = try transaction.insertSyncState(
                    SyncStateRow(
                        name: name, type: "syncDown",
                        target: ["type": "soql", "query": "SELECT Id FROM Account"],
                        options: ["mergeMode": "overwrite"], soupName: "accounts", status: status,
                        progress: 100, totalSize: 3))
            }
        }
        // As a user with sqlite3: options that are not JSON, and a type from another version.
        try storeSQL(dir, "UPDATE sync_state SET options = '{not json' WHERE name = 'odd'")
        try storeSQL(dir, "UPDATE sync_state SET type = 'syncSideways' WHERE name = 'sideways'")
        let options =
            "has options that are not a JSON object (malformed JSON at byte 1: expected a string key)"
        let type = "has an unknown type 'syncSideways' (this version knows syncDown, syncUp)"

        let table = try await BatonProcess.run(["syncs", "--dir", dir])
        #expect(table.status == 0, "stderr: \(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(table.stdout)")
        #expect(lines.contains { $0.hasPrefix("1 ") && $0.contains(" done ") }, "\(table.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix("2 ") && $0.contains(" odd ") && $0.contains("unreadable: has options")
            },
            "\(table.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix("3 ") && $0.contains("syncSideways")
                    && $0.contains("unreadable: has an unknown type")
            }, "\(table.stdout)")

        let json = try await BatonProcess.run(["syncs", "--dir", dir, "--json"])
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let listed = try JSONValue(parsing: json.stdout).arrayValue ?? []
        #expect(listed.map { $0.value(atPath: "name")?.stringValue } == ["accounts", "odd", "sideways"])
        #expect(listed.map { $0.value(atPath: "unreadable")?.stringValue } == [nil, options, type])
        #expect(listed.dropFirst().map { $0.value(atPath: "status")?.stringValue } == ["running", "stopped"])
        #expect(listed.first?.value(atPath: "progress") == 100)

        let running = try await BatonProcess.run(["syncs", "--dir", dir, "--status", "running", "--json"])
        #expect(running.status == 0, "stderr: \(running.stderr)")
        #expect(try JSONValue(parsing: running.stdout).arrayValue?.map { $0.value(atPath: "id") } == [2])

        let status = try await BatonProcess.run(["status", "--dir", dir])
        #expect(status.status == 0, "stderr: \(status.stderr)")
        #expect(status.stdout.contains("syncs: done=1 running=1 stopped=1"), "\(status.stdout)")
        #expect(
            status.stdout.contains("unreadable sync: 'odd' (#2), running: \(options)"), "\(status.stdout)")
        #expect(
            status.stdout.contains("unreadable sync: 'sideways' (#3), stopped: \(type)"), "\(status.stdout)")

        let statusJSON = try await BatonProcess.run(["status", "--dir", dir, "--json"])
        #expect(statusJSON.status == 0, "stderr: \(statusJSON.stderr)")
        let shown =
            try JSONValue(parsing: statusJSON.stdout).value(atPath: "unreadableSyncs")?.arrayValue ?? []
        #expect(shown.map { $0.value(atPath: "id") } == [2, 3])
        #expect(shown.map { $0.value(atPath: "unreadable")?.stringValue } == [options, type])

        // `wait` sees it by its stored status.
        #expect(
            try await BatonProcess.run(["wait", "--dir", dir, "--sync", "odd=running", "--timeout", "5"])
                .status == 0)
    }
}

extension HeavyEndToEnd {
    @Suite("A participant with syncs that cannot be read", .timeLimit(.minutes(4)))
    struct UnreadableSyncParticipantTests {
        @Test(
            "a participant resumes the good sync, sets the bad rows aside without holding the lease in a loop, and runs a repaired one on its retry"
        )
        func resumesTheGoodOnes() async throws {
            let f = try await CoordinatorFixture(records: 20)
            let odd = ["--sync-down", "odd:odd:SELECT Id FROM Account"]
            let first = try await f.start("host", role: "host", lifecycle: "foreground", extra: odd)
            #expect(try await f.wait(["--sync", "accounts=done"]))
            #expect(try await f.wait(["--sync", "odd=done"]))
            await first.send(SIGTERM)
            #expect(try await first.wait(timeout: .seconds(60)).status == 0)

            // While nobody runs: `accounts` left running (a writer that died), `odd`'s options
            // broken by hand, and a sync written by another version, left running.
            try storeSQL(f.dir, "UPDATE sync_state SET status = 'running' WHERE name = 'accounts'")
            try storeSQL(f.dir, "UPDATE sync_state SET options = '{not json' WHERE name = 'odd'")
            try storeSQL(
                f.dir,
                """
                INSERT INTO sync_state (name, type, target, options, soupName, status)
                VALUES ('sideways', 'syncSideways', '{}', '{}', 'accounts', 'running')
                """)
            try await f.start("host", role: "host", lifecycle: "foreground", extra: odd)

            // The good sync is resumed; the bad ones end failed, each with why, naming it.
            #expect(try await f.wait(["--sync", "accounts=done"]))
            #expect(try await f.wait(["--sync", "sideways=failed"]))
            #expect(try await f.wait(["--sync", "odd=failed"]))
            try await f.waitForStatus("odd's retry") { statuses in
                statuses.contains { status in
                    status.name == "host"
                        && status.retrying.contains {
                            $0.name == "odd"
                                && $0.lastError.contains("sync 'odd' (#2) in the store has options")
                        }
                }
            }
            try await f.waitForLog("host", "both set aside") { events in
                let named = events.filter { $0["event"] == "sync.setAside" }.compactMap {
                    $0["name"]?.stringValue
                }
                return named.contains("odd") && named.contains("sideways")
            }
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(status.status == 0, "stderr: \(status.stderr)")
            #expect(!status.stdout.contains("problem:"), "\(status.stdout)")
            #expect(status.stdout.contains("retrying: host: odd: attempt"), "\(status.stdout)")
            #expect(
                status.stdout.contains("unreadable sync: 'sideways' (#3), failed: has an unknown type"),
                "\(status.stdout)")
            let published = ParticipantStatus.readAll(in: try SharedDirectory(path: f.dir))
            #expect(published.first { $0.name == "host" }?.phase == .writer)
            #expect(published.first { $0.name == "host" }?.problem == nil)
            let syncs = try await BatonProcess.run(["syncs", "--dir", f.dir, "--json"])
            #expect(syncs.status == 0, "stderr: \(syncs.stderr)")
            let sideways = try JSONValue(parsing: syncs.stdout).arrayValue?.first {
                $0.value(atPath: "name") == "sideways"
            }
            #expect(
                sideways?.value(atPath: "error")?.stringValue?.hasPrefix(
                    "sync 'sideways' (#3) in the store has an unknown type 'syncSideways'") == true)

            // Repaired by hand while the participant runs: its next retry runs it, no hand-over.
            try storeSQL(
                f.dir, #"UPDATE sync_state SET options = '{"mergeMode":"overwrite"}' WHERE name = 'odd'"#)
            #expect(try await f.wait(["--sync", "odd=done"]))
            try await f.waitForStatus("odd's retry to end") { statuses in
                statuses.contains { $0.name == "host" && $0.retrying.isEmpty }
            }
            // One holding all along, and never a failed start.
            let events = f.log("host")
            let restarted = events.lastIndex { $0["event"] == "started" } ?? events.startIndex
            #expect(events[restarted...].filter { $0["event"] == "lease.acquired" }.count == 1)
            #expect(
                !events.contains { $0["event"] == "writer.error" },
                "\(events.filter { $0["event"] == "writer.error" })")
            try await f.finish()
        }
    }
}
