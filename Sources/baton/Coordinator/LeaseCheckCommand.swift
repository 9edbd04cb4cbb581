import ArgumentParser
import BatonHarness

extension LeaseCommand {
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Exit 0 only if lease intervals never overlap, epochs strictly increase and every logged commit came from the lease holder of its time.",
            discussion: """
                The store logs its newest 10,000 commits with the committing process and the epoch \
                current at the time. A commit by a process that did not hold that epoch, a commit \
                fenced by a stale epoch, or one made after its holder released the lease fails the \
                check. Commits made outside any lease (for instance by `baton store upsert`) are \
                counted, and fail the check only with --strict. Intervals folded out of the history \
                (`baton lease limit`) were checked, with their commits, when they were folded: what \
                was found then fails the check as before. With --strict, a table Baton writes that \
                lost its write guard (the triggers that refuse writes from anything but Baton, \
                dropped or changed with sqlite3) fails the check too, named.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Also fail on commits made outside any lease, and on tables without their write guard.")
        var strict = false

        func run() throws {
            let audit = try LeaseReport.audit(try directory.openStoreForReading(), strict: strict)
            guard audit.passed else {
                for violation in audit.violations { CLIOutput.warn(violation.description) }
                for table in audit.unguarded { CLIOutput.warn(table) }
                throw CLIError(message: audit.summary)
            }
            CLIOutput.line(audit.summary)
        }
    }
}
