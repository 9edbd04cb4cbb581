import BatonStore
import Foundation

/// Scenarios that need separate processes: contention (8 writers through the strictly fair
/// lease vs. 8 writing directly with a busy timeout, and 8 taking the same turns through a bare
/// kernel lock) and memory (peak RSS of a sync down, small vs. large).
struct ProcessBench {
    struct Contention {
        var writesPerSec: Double
        var p50Ms: Double
        var p99Ms: Double
        /// The longest any write waited, from ready to committed.
        var maxMs: Double
        var errors: Int
    }

    /// The contention modes, in the order each round runs them (each is also the name its
    /// figures go under): the strictly fair lease, the busy timeout and the bare kernel lock.
    static let contentionModes = ["lease", "busy", "floor"]

    /// `runs` rounds of every mode, alternating; latencies pooled per mode.
    static func alternatingContention(_ env: BenchEnvironment, runs: Int) async throws
        -> [String: Contention]
    {
        var pooled: [String: (latencies: [Double], errors: Int, seconds: Double)] = [:]
        for _ in 0..<runs {
            for mode in contentionModes {
                let run = try await contentionRun(env, mode: mode)
                pooled[mode, default: ([], 0, 0)].latencies += run.latencies
                pooled[mode, default: ([], 0, 0)].errors += run.errors
                pooled[mode, default: ([], 0, 0)].seconds += run.seconds
            }
        }
        return pooled.mapValues { run in
            Contention(
                writesPerSec: Double(run.latencies.count) / max(run.seconds, 1e-9),
                p50Ms: BenchStats.percentile(run.latencies, 50),
                p99Ms: BenchStats.percentile(run.latencies, 99),
                maxMs: run.latencies.max() ?? 0, errors: run.errors)
        }
    }

    /// One run: every worker sets up (store, soup, lease) and says it is ready; the clock starts
    /// when all are, so process start-up is not measured as contention.
    static func contentionRun(
        _ env: BenchEnvironment, mode: String, processes: Int = 8, writes: Int = 200
    ) async throws -> (latencies: [Double], errors: Int, seconds: Double) {
        let shared = try env.freshDirectory()
        // The workers' soup, made before any of them starts (set-up, outside the contention).
        let setup = try UnfencedStore.open(directory: shared, logger: env.quietLogger())
        try setup.registerSoup("writes", indexSpecs: [])
        try setup.close()
        var workers: [WorkerProcess] = []
        for index in 0..<processes {
            workers.append(
                try await WorkerProcess(
                    env,
                    [
                        "--mode", mode, "--dir", shared.path, "--writes", String(writes), "--name",
                        "w\(index)",
                        "--wait-for-go",
                    ]))
        }
        for worker in workers { try await worker.ready() }
        let clock = ContinuousClock()
        let started = clock.now
        for worker in workers { worker.go() }
        var outputs: [JSONValue] = []
        for worker in workers { outputs.append(try await worker.result()) }
        let elapsed = BenchStats.seconds(clock.now - started)
        let latencies = outputs.flatMap {
            $0.value(atPath: "latenciesMs")?.arrayValue?.compactMap(\.doubleValue) ?? []
        }
        let errors = outputs.reduce(0) { $0 + Int($1.value(atPath: "errors")?.intValue ?? 0) }
        return (latencies, errors, elapsed)
    }

    /// Peak RSS (KiB) of a child process syncing down `records` records.
    static func peakRSS(_ env: BenchEnvironment, records: Int) async throws -> Int {
        try await env.reseed(records, bytes: 400)
        let shared = try env.freshDirectory()
        let output = try await runWorker(
            env,
            [
                "--mode", "syncdown", "--dir", shared.path, "--server", env.server.url,
            ])
        guard output.value(atPath: "records")?.intValue == Int64(records) else {
            throw CLIError(
                message:
                    "memory bench: the worker synced \(output.value(atPath: "records")?.jsonString ?? "nothing")"
            )
        }
        return Int(output.value(atPath: "maxRSSKiB")?.intValue ?? 0)
    }

    /// Runs `baton bench-worker ARGS` and parses its last JSON line.
    static func runWorker(_ env: BenchEnvironment, _ arguments: [String]) async throws -> JSONValue {
        try await WorkerProcess(env, arguments).result()
    }
}

/// A `baton bench-worker` child and the lines it prints: `ready` once set up (with
/// `--wait-for-go`), its JSON result last.
final class WorkerProcess: Sendable {
    private let process: ChildProcess
    private let arguments: [String]

    init(_ env: BenchEnvironment, _ arguments: [String]) async throws {
        self.arguments = arguments
        process = try await ChildProcess.start(
            env.baton, ["bench-worker"] + arguments, input: .interactive, stdout: .collect)
    }

    /// Returns once the worker printed `ready`.
    func ready() async throws {
        for await line in process.lines where line == "ready" { return }
        throw failure()
    }

    /// Lets a worker waiting in `--wait-for-go` start.
    func go() {
        process.write("go\n")
        process.closeInput()
    }

    /// Waits for the worker to exit and parses its last line.
    func result() async throws -> JSONValue {
        process.closeInput()
        var last: String?
        for await line in process.lines { last = line }
        guard await process.wait().isSuccess, let last else { throw failure() }
        return try JSONValue(parsing: last)
    }

    private func failure() -> CLIError {
        CLIError(message: "bench worker \(arguments.prefix(2).joined(separator: " ")) failed")
    }
}
