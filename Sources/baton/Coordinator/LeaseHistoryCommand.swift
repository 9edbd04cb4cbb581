import ArgumentParser
import BatonCoordinator
import BatonHarness

extension LeaseCommand {
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every lease interval: epoch, holder, pid, acquired, released.",
            discussion: """
                Times are ISO 8601 in UTC with milliseconds; with --json they are numbers, \
                milliseconds since 1970. Past the history's limit (`baton lease limit`) the oldest \
                intervals are folded into one summary row, shown first: their epochs, how many, \
                and the violations the audit found in them.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Print a JSON array.") var json = false

        func run() throws {
            let store = try directory.openStoreForReading()
            let (history, folded) = try LeaseHistory.readWithFold(store: store, directory: store.directory)
            if json {
                try CLIOutput.json(LeaseReport.entries(history, folded: folded))
            } else {
                for line in LeaseReport.table(history, folded: folded) { CLIOutput.line(line) }
            }
        }
    }
}
