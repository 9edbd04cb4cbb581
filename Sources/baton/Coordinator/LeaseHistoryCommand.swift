import ArgumentParser
import BatonCoordinator
import BatonHarness

extension LeaseCommand {
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every lease interval: epoch, holder, pid, acquired, released.",
            discussion: """
                Times are ISO 8601 in UTC with milliseconds; with --json they are numbers, \
                milliseconds since 1970.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Print a JSON array.") var json = false

        func run() throws {
            let store = try directory.openStore(create: false)
            let history = try LeaseHistory.read(store: store, directory: store.directory)
            if json {
                try CLIOutput.json(history)
            } else {
                for line in LeaseReport.table(history) { CLIOutput.line(line) }
            }
        }
    }
}
