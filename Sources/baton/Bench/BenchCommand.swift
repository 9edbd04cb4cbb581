import ArgumentParser
import BatonHarness
import BatonStore
import Foundation

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract:
            "Measure ingest, stop, hand-over, takeover of a frozen writer, resume waste, contention, readers' notification and memory, each against a baseline.",
        discussion: """
            Every figure is measured in this run, with its baseline in the same run, and reported as \
            a ratio. Nothing fails on a wall-clock figure. Build with `-c release` for meaningful \
            numbers (Scripts/bench.sh does).
            """
    )

    @Option(help: "Records for ingest and resume waste.") var records = 100_000
    @Option(help: "Trials for the latency scenarios.") var trials = 10
    @Option(
        help:
            "Run only this scenario (repeat for several): ingest, lifecycle, takeover, waste, incremental, ghosts, syncs, syncup, contention, readers, memory (default: all)."
    )
    var only: [String] = []
    @Flag(
        help:
            "Keep the scenarios' directories (stores, participants' logs) instead of deleting them, and print where they are."
    )
    var keep = false
    @Option(help: "Write the figures as JSON to this file.") var json: String?
    @Option(help: "Write the table as Markdown to this file.") var markdown: String?

    func validate() throws {
        guard records >= 1000 else { throw ValidationError("--records must be at least 1000") }
        guard (1...1000).contains(trials) else {
            throw ValidationError("--trials must be between 1 and 1000")
        }
        for name in only where !BenchSuite.scenarios.contains(name) {
            throw ValidationError(
                "unknown scenario '\(name)'; use \(BenchSuite.scenarios.sorted().joined(separator: ", "))")
        }
    }

    func run() async throws {
        let interrupt = ChildProcesses.exitOnInterrupt()
        defer { interrupt.cancel() }
        var suite = BenchSuite(
            records: records, trials: trials, only: only, baton: ChildProcesses.executablePath,
            progress: { CLIOutput.stderrLine("bench: \($0)") })
        suite.keepDirectories = keep
        let (figures, table) = try await suite.run()
        for line in table { CLIOutput.line(line) }
        if let json {
            try Data((JSONValue.object(figures).jsonString + "\n").utf8).write(to: URL(fileURLWithPath: json))
        }
        if let markdown {
            try Data((table.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: markdown))
        }
    }
}
