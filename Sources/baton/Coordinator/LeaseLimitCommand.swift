import ArgumentParser
import BatonHarness
import BatonStore

extension LeaseCommand {
    struct Limit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set how many intervals the lease history keeps before the oldest are folded.",
            discussion: """
                The limit is a store setting, the same for every process (default 10000). Past it, \
                the transaction that records a new holding folds the oldest tenth into one summary \
                (first and last epoch, count, the violations lease check found in them), which \
                `lease history` shows and `lease check` still reports. Setting it writes under the \
                writer lease, like `store upsert`, and folds at once when the history holds more.
                """)

        @OptionGroup var directory: DirectoryOptions
        @OptionGroup var lease: ToolLeaseOptions
        @Argument(help: "The new limit, in intervals (10-10000000); without it, the current one is shown.")
        var intervals: Int?
        @Flag(help: "Print one JSON object.") var json = false

        func validate() throws {
            if let intervals, !LeaseHistoryFold.limits.contains(intervals) {
                throw ValidationError(
                    "the limit must be between \(LeaseHistoryFold.limits.lowerBound) and \(LeaseHistoryFold.limits.upperBound) intervals"
                )
            }
        }

        func run() async throws {
            let store = try directory.openStore(create: false, setupTimeout: lease.setupTimeout)
            if let intervals {
                try await lease.write(store, tool: "lease-limit") { try $0.setLeaseHistoryLimit(intervals) }
            }
            let size = try await store.read { try LeaseHistorySize(reading: $0) }
            if json {
                try CLIOutput.json(size)
            } else {
                CLIOutput.line(size.line)
            }
        }
    }
}
