import ArgumentParser
import BatonCoordinator
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
            let history = try directory.openStore(create: false).read { try $0.leaseHistory() }
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
            abstract: "Exit 0 only if lease intervals never overlap and epochs strictly increase.")

        @OptionGroup var directory: DirectoryOptions

        func run() throws {
            let history = try directory.openStore(create: false).read { try $0.leaseHistory() }
            let violations = LeaseAudit.check(history)
            guard violations.isEmpty else {
                for violation in violations { CLIOutput.warn(violation.description) }
                throw CLIError(
                    message:
                        "lease check failed: \(violations.count) violation(s) in \(history.count) intervals")
            }
            CLIOutput.line(
                "lease check passed: \(history.count) intervals, epochs strictly increasing, no overlaps")
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
