import ArgumentParser
import BatonHarness
import BatonStore
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a scripted day of a host and an extension sharing one store, and check the outcome.",
        discussion: """
            Starts the reference server in this process (127.0.0.1, a free port) with seeded records \
            that share time stamps, makes a temporary shared directory, and runs a host and an \
            extension as separate `baton participant` processes. The host syncs down, goes to the \
            background mid-way and hands the baton to the extension, which resumes; the server \
            changes and deletes records; the host returns, takes the baton back (priority), \
            reSyncs and cleans resync ghosts; a local edit is synced up. Ends with a summary and \
            a non-zero exit if any check fails.
            """
    )

    @Option(help: "Records to seed on the server.") var records = 5_000
    @Option(name: .customLong("batch-size"), help: "Records per sync down page.") var batchSize = 250
    @Option(help: "Keep the shared directory here instead of a temporary one.") var keep: String?
    @Option(help: "Write a self-contained HTML timeline of the run to this file.") var report: String?
    @Flag(help: "Print the summary as one JSON object (no live view).") var json = false

    func validate() throws {
        guard (100...1_000_000).contains(records) else {
            throw ValidationError("--records must be between 100 and 1,000,000")
        }
        guard (1...2000).contains(batchSize) else {
            throw ValidationError("--batch-size must be between 1 and 2000")
        }
    }

    func run() async throws {
        let view = LiveView(enabled: !json)
        let demo = try DemoRun(
            records: records, batchSize: batchSize, keep: keep, view: view,
            baton: ChildProcesses.executablePath)
        let interrupt = ChildProcesses.exitOnInterrupt()
        defer { interrupt.cancel() }
        let summary = try await demo.run(reportPath: report)
        if json {
            try CLIOutput.json(summary)
        } else {
            view.finish()
            for line in summary.lines { CLIOutput.line(line) }
            if let report { CLIOutput.line("report: \(report)") }
        }
        if !summary.passed { throw CLIError(message: "demo checks failed", exitCode: 1) }
    }
}
