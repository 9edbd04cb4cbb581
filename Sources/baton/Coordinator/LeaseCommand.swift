import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore

struct LeaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease",
        abstract: "Inspect the writer lease's history.",
        subcommands: [History.self, Check.self]
    )

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every lease interval: epoch, holder, pid, acquired, released.")

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Print a JSON array.") var json = false

        func run() throws {
            let store = try directory.openStore(create: false)
            let history = try LeaseHistory.read(store: store, directory: store.directory)
            if json {
                CLIOutput.json(.array(history.map(\.jsonValue)))
                return
            }
            let rows = history.map { record in
                [
                    String(record.epoch), record.name, String(record.pid), String(record.acquired),
                    record.released.map(String.init) ?? "held", record.releaseKind ?? "",
                ]
            }
            for line in Table.render(
                header: ["EPOCH", "NAME", "PID", "ACQUIRED", "RELEASED", "HOW"], rows: rows)
            {
                CLIOutput.line(line)
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Exit 0 only if lease intervals never overlap, epochs strictly increase and every logged commit came from the lease holder of its time.",
            discussion: """
                The store logs its newest 10,000 commits with the committing process and the epoch \
                current at the time. A commit by a process that did not hold that epoch, a commit \
                fenced by a stale epoch, or one made after its holder released the lease fails the \
                check. Commits made outside any lease (for instance by `baton store upsert`) are \
                counted, and fail the check only with --strict.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Also fail on commits made outside any lease.") var strict = false

        func run() throws {
            let store = try directory.openStore(create: false)
            let (recorded, commits) = try store.read { (try $0.leaseHistory(), try $0.commitLog()) }
            // A release only the lock file holds yet (the next holder's first write records it).
            let history = LeaseHistory.fold(
                recorded, record: HeartbeatRecord.read(at: store.directory.writerLockPath))
            let violations = LeaseAudit.check(history)
            let report = LeaseAudit.checkCommits(commits, history: history, strict: strict)
            let all = violations + report.violations
            guard all.isEmpty else {
                for violation in all { CLIOutput.warn(violation.description) }
                throw CLIError(
                    message:
                        "lease check failed: \(all.count) violation(s) in \(history.count) intervals and \(commits.count) commits"
                )
            }
            let unleased = report.unleased == 0 ? "" : " (\(report.unleased) made outside any lease)"
            CLIOutput.line(
                "lease check passed: \(history.count) intervals, epochs strictly increasing, no overlaps; \(commits.count) commits by the holder of their epoch\(unleased)"
            )
        }
    }
}

extension LeaseRecord {
    var jsonValue: JSONValue {
        [
            "epoch": .int(epoch), "name": .string(name), "pid": .int(Int64(pid)), "acquired": .int(acquired),
            "released": released.map(JSONValue.int) ?? .null,
            "releaseKind": releaseKind.map(JSONValue.string) ?? .null,
        ]
    }
}
