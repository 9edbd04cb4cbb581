import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

/// Errors that name the real cause: what a tool can check before it waits for the writer lease
/// fails at once; a lease timeout names its holder and what to do about it; a record that
/// cannot be matched is refused by position; tables cut at words.
@Suite("Errors name the real cause")
struct ErrorCauseTests {
    /// A store with soup `accounts` (indexed on `Id`) and a `baton store upsert` holding the
    /// writer lease inside an open transaction until it is killed.
    static func heldStore(_ temp: TemporaryDirectory) async throws -> (dir: String, holder: BatonProcess) {
        let dir = temp.path + "/shared"
        let created = try await BatonProcess.run([
            "store", "soup", "create", "--dir", dir, "accounts", "--index", "Id",
        ])
        try #require(created.status == 0, "\(created.stderr)")
        let holder = try await BatonProcess([
            "store", "upsert", "--dir", dir, "--soup", "accounts", "--hold-transaction", #"{"Id":"held"}"#,
        ])
        try await holder.waitForLine(containing: "holding transaction")
        return (dir, holder)
    }

    static func expectOneLine(
        _ result: ProcessResult, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(
            result.stderr.hasPrefix("baton: error: ") && result.stderr.contains(expected), "\(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(
            result.stderr.split(separator: "\n").count == 1, "\(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(
            !result.stderr.contains("held by"), "blames the lease holder: \(result.stderr)",
            sourceLocation: sourceLocation)
    }

    @Test(
        "while another process holds the lease, a missing soup, an unindexed path and an id-less record are refused at once, not blamed on the holder"
    )
    func checkedBeforeTheLease() async throws {
        let temp = try TemporaryDirectory()
        let (dir, holder) = try await Self.heldStore(temp)
        defer { holder.sendDetached(SIGKILL) }
        // A timeout far longer than the process may take: a tool that waited for the lease
        // first would be killed by the bound below and fail the test.
        let bound = Duration.seconds(20)
        let noSoup = try await BatonProcess.run(
            ["store", "upsert", "--dir", dir, "--soup", "nosuchsoup", "--timeout", "60", #"{"Id":"a"}"#],
            timeout: bound)
        Self.expectOneLine(noSoup, "no soup named 'nosuchsoup'")

        let drop = try await BatonProcess.run(
            ["store", "soup", "drop", "--dir", dir, "nosuchsoup", "--timeout", "60"], timeout: bound)
        Self.expectOneLine(drop, "no soup named 'nosuchsoup'")

        let unindexed = try await BatonProcess.run(
            [
                "store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Code", "--timeout",
                "60",
                #"{"Code":"a"}"#,
            ], timeout: bound)
        Self.expectOneLine(unindexed, "external id path 'Code' is not indexed in soup 'accounts'")

        let idless = try await BatonProcess.run(
            [
                "store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Id", "--timeout",
                "60",
                #"{"Id":"a"}"#, #"{"Name":"no id here"}"#,
            ], timeout: bound)
        Self.expectOneLine(idless, "record 2 of 2 has no Id")

        // A soup that has its indexes already is only read: no wait for the lease either.
        let exists = try await BatonProcess.run(
            ["store", "soup", "create", "--dir", dir, "accounts", "--index", "Id", "--timeout", "60"],
            timeout: bound)
        #expect(exists.status == 0, "\(exists.stderr)")
        #expect(exists.stdout.contains("soup 'accounts' ready"), "\(exists.stdout)")
    }

    @Test("a lease timeout names a holder that is no participant by its pid, with no placeholder")
    func timeoutNamesAToolHolder() async throws {
        let temp = try TemporaryDirectory()
        let (dir, holder) = try await Self.heldStore(temp)
        defer { holder.sendDetached(SIGKILL) }
        let refused = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "accounts", "--timeout", "0.5", #"{"Id":"b"}"#,
        ])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "held by pid \(holder.pid), which is not a participant"),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("wait for it to finish"), "\(refused.stderr)")
        #expect(
            !refused.stderr.contains("NAME") && !refused.stderr.contains("baton signal"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
    }

    @Test(
        "store upsert --external-id refuses records without that id, by position, never by content, writing nothing"
    )
    func recordsWithoutTheIdField() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        let created = try await BatonProcess.run([
            "store", "soup", "create", "--dir", dir, "accounts", "--index", "Id",
        ])
        try #require(created.status == 0, "\(created.stderr)")
        let secret = "Confidential Customer 7"
        for (arguments, stdin, position) in [
            ([#"{"Name":"\#(secret)"}"#], nil, "record 1 of 1"),
            ([#"{"Id":"a"}"#, #"{"Id":null,"Name":"\#(secret)"}"#, #"{"Id":"c"}"#], nil, "record 2 of 3"),
            ([], "{\"Id\":\"a\"}\n\n{\"Id\":\"b\"}\n{\"Name\":\"\(secret)\"}\n", "record 3 of 3"),
        ] as [([String], String?, String)] {
            for local in [false, true] {
                let result = try await BatonProcess.run(
                    ["store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Id"]
                        + (local ? ["--local"] : []) + arguments, stdin: stdin)
                #expect(result.status == 1, "\(result.stderr)")
                #expect(result.stderr.hasPrefix("baton: error: \(position) has no Id"), "\(result.stderr)")
                #expect(result.stderr.contains("--external-id"), "says what to do: \(result.stderr)")
                #expect(!result.stderr.contains(secret), "prints the record: \(result.stderr)")
                #expect(result.stderr.split(separator: "\n").count == 1)
            }
        }
        let count = try await BatonProcess.run([
            "store", "query", "--dir", dir, "--soup", "accounts", "--count",
        ])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "a refused upsert wrote")

        // With an id on every record they are written; without --external-id, as new records.
        let matched = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "accounts", "--external-id", "Id", #"{"Id":"a"}"#,
            #"{"Id":"a","Name":"again"}"#,
        ])
        #expect(matched.status == 0, "\(matched.stderr)")
        let inserted = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "accounts", #"{"Name":"new"}"#,
        ])
        #expect(inserted.status == 0, "\(inserted.stderr)")
        let after = try await BatonProcess.run([
            "store", "query", "--dir", dir, "--soup", "accounts", "--count",
        ])
        #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
    }

    @Test("baton syncs cuts a long error after a whole word, keeps the retry, and --json has it whole")
    func syncsErrorAtAWord() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        // Character 60 falls inside "(injected": a cut at 60 characters shows "(injec".
        let error =
            "HTTP 500 from the server for the page of 2000 records (injected fault, 3 of 5); the sync fails"
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        try await unfenced.write { transaction in
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "accounts", type: "syncDown",
                    target: ["type": "soql", "query": "SELECT Id FROM Account"],
                    options: ["mergeMode": "overwrite"], soupName: "accounts", status: "failed", progress: 40,
                    totalSize: 10, error: error))
        }
        try unfenced.close()
        let table = try await BatonProcess.run(["syncs", "--dir", dir])
        #expect(table.status == 0, "\(table.stderr)")
        let row = try #require(table.stdout.split(separator: "\n").first { $0.contains("accounts") })
        let shown = try #require(row.range(of: "HTTP 500").map { String(row[$0.lowerBound...]) })
        #expect(shown.hasSuffix("…"), "\(shown)")
        #expect(shown.count <= 60, "\(shown)")
        let words = shown.dropLast().split(separator: " ")
        let original = error.split(separator: " ")
        for (index, word) in words.enumerated() {
            let whole =
                index == words.count - 1
                ? original[index].trimmingCharacters(in: [",", ";", ":"]) : String(original[index])
            #expect(String(word) == whole, "cut mid-word: \(shown)")
        }
        let json = try await BatonProcess.run(["syncs", "--dir", dir, "--json"])
        #expect(
            try JSONValue(parsing: json.stdout).arrayValue?.first?.value(atPath: "error")?.stringValue
                == error)
    }
}

extension HeavyEndToEnd {
    @Suite("Refused lifecycle signals in status", .serialized, .timeLimit(.minutes(3)))
    struct RefusedSignalProcessTests {
        /// `participants[]` of `baton status --json`, by name.
        static func statusJSON(_ dir: String) async throws -> [String: JSONValue] {
            let result = try await BatonProcess.run(["status", "--dir", dir, "--json"])
            try #require(result.status == 0, "\(result.stderr)")
            var byName: [String: JSONValue] = [:]
            for participant in try JSONValue(parsing: result.stdout).value(atPath: "participants")?.arrayValue
                ?? []
            {
                if let name = participant.value(atPath: "name")?.stringValue { byName[name] = participant }
            }
            return byName
        }

        @Test(
            "an empty lifecycle file is logged and shown as the refused signal in status, status --json and the status file, until a valid signal"
        )
        func refusedSignalInStatus() async throws {
            let f = try await CoordinatorFixture(records: 0)
            try await f.start("host", role: "host", lifecycle: "background")
            #expect(try await f.wait(["--lifecycle", "host=background"]))
            let before = WallClock.nowMillis()
            // What `: > D/lifecycle/host` does.
            try Data().write(to: URL(fileURLWithPath: f.dir + "/lifecycle/host"))
            try await f.waitForLog("host", "lifecycle.ignored") { log in
                log.contains { $0["event"] == "lifecycle.ignored" && $0["reason"] == "is empty" }
            }
            try await f.waitForStatus("host's refused signal") { statuses in
                statuses.contains { $0.name == "host" && $0.refusedSignal?.reason == "is empty" }
            }
            let status = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(
                status.stdout.contains(
                    "refused signal: host: \(f.dir)/lifecycle/host is empty (at "),
                "\(status.stdout)")
            #expect(status.stdout.contains("host stays background"), "\(status.stdout)")
            let shown = try #require(try await Self.statusJSON(f.dir)["host"])
            #expect(shown.value(atPath: "refusedSignal.reason") == "is empty")
            #expect((shown.value(atPath: "refusedSignal.at")?.intValue ?? 0) >= before)
            #expect(shown.value(atPath: "lifecycle") == "background")
            let file = try JSONValue(
                parsing: try Data(contentsOf: URL(fileURLWithPath: f.dir + "/participants/host.json")))
            #expect(file.value(atPath: "refusedSignal.reason") == "is empty")

            // A valid signal is obeyed and clears it.
            try await f.signal("host", "foreground")
            #expect(try await f.wait(["--writer", "host"]))
            try await f.waitForStatus("the refused signal to clear") { statuses in
                statuses.contains { $0.name == "host" && $0.refusedSignal == nil }
            }
            let cleared = try await BatonProcess.run(["status", "--dir", f.dir])
            #expect(!cleared.stdout.contains("refused signal"), "\(cleared.stdout)")
            #expect(try await Self.statusJSON(f.dir)["host"]?.value(atPath: "refusedSignal") == nil)
            try await f.finish()
        }
    }
}
