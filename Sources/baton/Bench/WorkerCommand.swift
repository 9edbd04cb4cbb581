import ArgumentParser
import BatonHarness

/// Child processes of `baton bench`: one contention writer, or one sync down measured for
/// peak RSS. Hidden: not a user command.
struct BenchWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench-worker", shouldDisplay: false)

    @Option var mode: String
    @Option var dir: String
    @Option var writes = 200
    /// Lease mode: writes per turn, and the pause before a process asks for its next turn.
    @Option var burst = 2
    @Option(name: .customLong("pause-us")) var pauseMicroseconds = 300
    @Option var name = "w"
    @Option var server: String?
    /// Print `ready` once set up, then start when a line arrives on stdin (or it closes).
    @Flag(name: .customLong("wait-for-go")) var waitForGo = false

    func run() async throws {
        var worker = BenchWorker(mode: mode, dir: dir)
        (worker.writes, worker.burst, worker.pauseMicroseconds) = (writes, burst, pauseMicroseconds)
        (worker.name, worker.server, worker.waitForGo) = (name, server, waitForGo)
        try await worker.run(output: CLIOutput.line)
    }
}
