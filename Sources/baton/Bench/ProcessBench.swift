import BatonStore
import Foundation

/// Scenarios that need separate processes: contention (8 writers through the lease vs. 8
/// writing directly with a busy timeout) and memory (peak RSS of a sync down, small vs. large).
struct ProcessBench {
    struct Contention {
        var writesPerSec: Double
        var p99Ms: Double
        var errors: Int
    }

    /// `runs` lease runs and `runs` busy-timeout runs, alternating; latencies pooled per mode.
    static func alternatingContention(_ env: BenchEnvironment, runs: Int) async throws -> (
        Contention, Contention
    ) {
        var pooled: [String: (latencies: [Double], errors: Int, seconds: Double)] = [:]
        for _ in 0..<runs {
            for mode in ["lease", "busy"] {
                let run = try await contentionRun(env, mode: mode)
                pooled[mode, default: ([], 0, 0)].latencies += run.latencies
                pooled[mode, default: ([], 0, 0)].errors += run.errors
                pooled[mode, default: ([], 0, 0)].seconds += run.seconds
            }
        }
        func summary(_ mode: String) -> Contention {
            let run = pooled[mode] ?? ([], 0, 1)
            return Contention(
                writesPerSec: Double(run.latencies.count) / max(run.seconds, 1e-9),
                p99Ms: BenchStats.percentile(run.latencies, 99), errors: run.errors)
        }
        return (summary("lease"), summary("busy"))
    }

    static func contentionRun(
        _ env: BenchEnvironment, mode: String, processes: Int = 8, writes: Int = 200
    ) async throws -> (latencies: [Double], errors: Int, seconds: Double) {
        let shared = try env.freshDirectory()
        _ = try SharedStore.open(directory: shared, logger: env.quietLogger())
        let clock = ContinuousClock()
        let started = clock.now
        let outputs = try await withThrowingTaskGroup(of: JSONValue.self) { group in
            for index in 0..<processes {
                group.addTask {
                    try await runWorker([
                        "--mode", mode, "--dir", shared.path, "--writes", String(writes), "--name",
                        "w\(index)",
                    ])
                }
            }
            var all: [JSONValue] = []
            for try await output in group { all.append(output) }
            return all
        }
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
        let output = try await runWorker([
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

    /// Runs `baton bench-worker ARGS` and parses its one JSON line.
    static func runWorker(_ arguments: [String]) async throws -> JSONValue {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ChildProcesses.executablePath)
        process.arguments = ["bench-worker"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try ChildProcesses.shared.run(process)
        defer { ChildProcesses.shared.forget(process.processIdentifier) }
        // Read to end of file on a thread of its own, then reap the child.
        let data = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: pipe.fileHandleForReading.readDataToEndOfFile())
            }
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = String(data: data, encoding: .utf8)?.split(separator: "\n").last
        else {
            throw CLIError(
                message: "bench worker \(arguments.first ?? "") \(arguments.dropFirst().first ?? "") failed")
        }
        return try JSONValue(parsing: String(line))
    }
}
