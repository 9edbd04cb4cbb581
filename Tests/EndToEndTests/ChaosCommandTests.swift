import BatonJSON
import BatonTestSupport
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("baton chaos", .serialized)
    struct ChaosCommandTests {
        static let kinds = [
            "kill-writer-mid-page", "kill-writer-between-pages", "kill-writer-after-server-commit",
            "sigstop-sigcont-writer", "server-5xx", "server-latency", "server-dropped-connection",
            "server-response-dropped-after-commit", "server-restart", "junk-signal-burst",
            "server-edits-during-sync", "stop-deadline-interrupt", "disk-full", "freeze-writer",
            "freeze-writer-in-transaction", "server-bulk-edit-one-stamp", "server-transaction-in-flight",
        ]

        @Test(
            "34 seeded rounds with 3 participants: every fault kind is injected twice and every invariant holds"
        )
        func twoBlocksOfRounds() async throws {
            let result = try await BatonProcess.run(
                ["chaos", "--seed", "30", "--rounds", "34", "--participants", "3", "--json"],
                timeout: .seconds(600))
            #expect(result.status == 0, "stderr: \(result.stderr.suffix(2000))")
            let summary = try JSONValue(parsing: result.stdout)
            #expect(summary.value(atPath: "passed") == true)
            #expect(summary.value(atPath: "rounds") == 34)
            #expect(summary.value(atPath: "violations")?.arrayValue?.isEmpty == true)
            #expect(summary.value(atPath: "faults")?.objectValue?.count == Self.kinds.count)
            for kind in Self.kinds {
                // 34 rounds hold two full blocks of the 17 kinds.
                #expect((summary.value(atPath: "faults")?.objectValue?[kind]?.intValue ?? 0) == 2, "\(kind)")
            }
            #expect((summary.value(atPath: "kills")?.intValue ?? 0) >= 6)
            #expect((summary.value(atPath: "localEdits")?.intValue ?? 0) > 0)
            #expect((summary.value(atPath: "lateCommits")?.intValue ?? 0) == 2)
            // Progress went to stderr, one line per round.
            #expect(result.stderr.components(separatedBy: "invariants hold").count - 1 == 34)
        }

        @Test(
            "a planted bug is caught by the invariant it breaks, with a reproduction command",
            arguments: [
                ("unleased-write", "commits under the lease"),
                ("lost-edit", "no local edit lost"),
                ("server-drift", "store = server"),
            ])
        func sabotage(kind: String, invariant: String) async throws {
            let temp = try TemporaryDirectory()
            let result = try await BatonProcess.run(
                [
                    "chaos", "--seed", "5", "--rounds", "2", "--json", "--sabotage", kind, "--keep",
                    temp.path + "/run",
                ],
                timeout: .seconds(300))
            #expect(result.status == 1, "stderr: \(result.stderr.prefix(3000))")
            let summary = try JSONValue(parsing: result.stdout)
            #expect(summary.value(atPath: "passed") == false)
            let violations = summary.value(atPath: "violations")?.arrayValue ?? []
            #expect(violations.count == 1)
            #expect(violations.first?.value(atPath: "invariant")?.stringValue == invariant, "\(violations)")
            #expect(result.stderr.contains("reproduce: baton chaos --seed 5 --rounds 2"))
            #expect(result.stderr.contains("files kept in \(temp.path)/run"))
        }

        @Test("bad options are refused before anything starts")
        func badOptions() async throws {
            let used = try TemporaryDirectory()
            try Data("x".utf8).write(to: URL(fileURLWithPath: used.path + "/leftover"))
            for arguments in [
                ["--rounds", "0"], ["--participants", "9"], ["--records", "3"], ["--keep", used.path],
            ] {
                let result = try await BatonProcess.run(["chaos"] + arguments)
                #expect(result.status != 0)
                #expect(result.stderr.contains(arguments[0]))
            }
        }
    }
}
