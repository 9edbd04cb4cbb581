import BatonCoordinator
import BatonStore
import Foundation

/// Readers see commits: this process commits pages of records one at a time into a fresh store,
/// and a `baton bench-worker --mode reader` process, subscribed to the store's change sequence
/// (inotify on `D/changes`), notes when it hears of each. Latency runs from the start of the
/// page's write (CLOCK_MONOTONIC, shared by the processes) to the reader's notification: an
/// upper bound, the write's own time included.
enum ReadersBench {
    struct Result {
        var latenciesMs: [Double]
        /// Commits the reader heard of only through a later one (coalesced).
        var coalesced: Int
    }

    static func run(_ env: BenchEnvironment, commits: Int = 200, pageSize: Int = 50) async throws -> Result {
        let shared = try env.freshDirectory()
        let store = try SharedStore.open(directory: shared, logger: env.quietLogger())
        try store.registerSoup("pages", indexSpecs: [IndexSpec(path: "n", type: .integer)])
        let first = try store.changeSequence()
        let reader = try WorkerProcess([
            "--mode", "reader", "--dir", shared.path, "--writes", String(first + Int64(commits)),
        ])
        try await reader.ready()
        var started: [Int64: UInt64] = [:]
        for index in 0..<commits {
            let page = (0..<pageSize).map { row -> JSONObject in
                [
                    "n": .int(Int64(index * pageSize + row)),
                    "text": .string(String(repeating: "x", count: 200)),
                ]
            }
            let begin = MonotonicClock.nanos()
            try await store.writeUnleased { transaction in try transaction.upsert(page, into: "pages") }
            started[first + Int64(index) + 1] = begin
            // A reader is notified of each commit, not of a burst: the next page comes later.
            try await Task.sleep(for: .milliseconds(2))
        }
        let heard = try await reader.result()
        var latencies: [Double] = []
        for item in heard.value(atPath: "heard")?.arrayValue ?? [] {
            guard let pair = item.arrayValue, pair.count == 2, let sequence = pair[0].intValue,
                let nanos = pair[1].intValue, let begin = started[sequence]
            else { continue }
            latencies.append(Double(Int64(nanos) - Int64(begin)) / 1e6)
        }
        return Result(latenciesMs: latencies, coalesced: commits - latencies.count)
    }
}
