import BatonCoordinator
import BatonStore
import Foundation

/// Readers see commits: this process commits pages of records one at a time into a fresh store,
/// and a `baton bench-worker --mode reader` process, subscribed to the store's change sequence
/// (inotify on `D/changes`), notes when it hears of each (CLOCK_MONOTONIC, shared by the
/// processes). Two latencies per page: from the moment the write returned (the commit as the
/// writer sees it, after the doorbell: the reader may hear of it a little before, so this one
/// can be below zero), and from the start of the write (the page's own write time included,
/// WAL checkpoints among it).
enum ReadersBench {
    struct Result {
        /// From the start of each page's write.
        var latenciesMs: [Double]
        /// From the return of each page's write.
        var fromCommitMs: [Double]
        /// Commits the reader heard of only through a later one (coalesced).
        var coalesced: Int
    }

    static func run(_ env: BenchEnvironment, commits: Int = 200, pageSize: Int = 50) async throws -> Result {
        let shared = try env.freshDirectory()
        let writer = try UnfencedStore.open(directory: shared, logger: env.quietLogger())
        let store = writer.store
        try writer.registerSoup("pages", indexSpecs: [IndexSpec(path: "n", type: .integer)])
        let first = try store.changeSequence()
        let reader = try await WorkerProcess(
            env,
            [
                "--mode", "reader", "--dir", shared.path, "--writes", String(first + Int64(commits)),
            ])
        try await reader.ready()
        var started: [Int64: (begin: UInt64, end: UInt64)] = [:]
        for index in 0..<commits {
            let page = (0..<pageSize).map { row -> JSONObject in
                [
                    "n": .int(Int64(index * pageSize + row)),
                    "text": .string(String(repeating: "x", count: 200)),
                ]
            }
            let begin = MonotonicClock.nanos()
            try await writer.write { transaction in try transaction.upsert(page, into: "pages") }
            started[first + Int64(index) + 1] = (begin, MonotonicClock.nanos())
            // A reader is notified of each commit, not of a burst: the next page comes later.
            try await Task.sleep(for: .milliseconds(2))
        }
        let heard = try await reader.result()
        var latencies: [Double] = []
        var fromCommit: [Double] = []
        for item in heard.value(atPath: "heard")?.arrayValue ?? [] {
            guard let pair = item.arrayValue, pair.count == 2, let sequence = pair[0].intValue,
                let nanos = pair[1].intValue, let write = started[sequence]
            else { continue }
            latencies.append(Double(Int64(nanos) - Int64(write.begin)) / 1e6)
            fromCommit.append(Double(Int64(nanos) - Int64(write.end)) / 1e6)
        }
        return Result(latenciesMs: latencies, fromCommitMs: fromCommit, coalesced: commits - latencies.count)
    }
}
