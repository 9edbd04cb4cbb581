import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// Time until a set of sync downs is done, with a mobile round trip on every request: all at
/// once (``SyncManager/setConcurrency(_:)``) against one at a time (Mobile Sync's way), in the
/// same run, alternating; beside them the floor: the longest single sync run alone, or all the
/// page saves alone (the same records, fetched before, upserted through the store page by
/// page), whichever is longer.
struct SyncsBench {
    struct Round: Encodable {
        var way: String
        var ms: Double
        /// The longest span from one sync's end to the next's (the first from the start): one
        /// at a time, a sync run alone.
        var longestSyncMs: Double
        /// This process's CPU time (user and system, every thread: the syncs and the
        /// in-process server) over the round.
        var cpuMs: Double
    }

    struct Result {
        var syncs: Int
        var records: Int
        var latencyMs: Int
        var batchSize: Int
        var rounds: [Round]
        var savesAloneMs: [Double]
    }

    static func run(
        syncs: Int = 8, records: Int = 5_000, latencyMs: Int = 100, batchSize: Int = 2_000, rounds: Int = 3
    ) async throws -> Result {
        var quiet = Logger(label: "baton.bench.syncs")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "bench"), logger: quiet)
        do {
            let client = RESTClient(baseURL: server.url, token: "bench")
            try await client.adminSeed(type: "Account", count: records, ageSeconds: 3600)
            var measured: [Round] = []
            var saves: [Double] = []
            for _ in 0..<rounds {
                try await client.adminSetFaults(["latencyMs": .int(Int64(latencyMs))])
                // Mobile Sync's way, then a sweep of how many at once (the default is chosen
                // from it), the last all of them: "concurrent".
                let sweep = [2, 4].filter { $0 < syncs }.map { ("concurrent\($0)", $0) }
                for (way, concurrency) in [("oneAtATime", 1)] + sweep + [("concurrent", syncs)] {
                    measured.append(
                        try await round(
                            way: way, concurrency: concurrency, syncs: syncs, records: records,
                            batchSize: batchSize, client: client, logger: quiet))
                }
                try await client.adminSetFaults(["latencyMs": 0])
                saves.append(
                    try await savesAlone(syncs: syncs, batchSize: batchSize, client: client, logger: quiet))
            }
            await server.stop()
            return Result(
                syncs: syncs, records: records, latencyMs: latencyMs, batchSize: batchSize, rounds: measured,
                savesAloneMs: saves)
        } catch {
            await server.stop()
            throw error
        }
    }

    /// `syncs` sync downs of every account, each into a soup of its own, submitted together;
    /// the time until every one is done.
    static func round(
        way: String, concurrency: Int, syncs: Int, records: Int, batchSize: Int, client: RESTClient,
        logger quiet: Logger
    ) async throws -> Round {
        let root =
            FileManager.default.temporaryDirectory.path + "/baton-bench-syncs-" + UUID().uuidString.prefix(8)
        defer {
            // Cleanup only: a leftover directory changes no figure.
            try? FileManager.default.removeItem(atPath: root)
        }
        let unfenced = try UnfencedStore.open(directory: try SharedDirectory(path: root), logger: quiet)
        let manager = SyncManager(
            unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: quiet)
        await manager.setConcurrency(concurrency)
        let spans = Locked<[Int64: (first: ContinuousClock.Instant, done: ContinuousClock.Instant?)]>([:])
        let listener: SyncUpdateBlock = { state in
            let now = ContinuousClock.now
            spans.withLock { spans in
                if spans[state.id] == nil { spans[state.id] = (now, nil) }
                if state.status == .done { spans[state.id]?.done = now }
            }
            return .proceed
        }
        return try await withThrowingTaskGroup(of: Void.self) { group -> Round in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let started = ContinuousClock.now
            let cpuStarted = ProcessCPU.milliseconds()
            var submitted: [SyncState] = []
            for index in 0..<syncs {
                let target = try SoqlSyncDownTarget(
                    client: client, query: "SELECT Id, Name, LastModifiedDate FROM Account",
                    batchSize: batchSize)
                submitted.append(
                    try await manager.syncDown(
                        target: target, soupName: "s\(index)", name: "s\(index)", onUpdate: listener))
            }
            for sync in submitted {
                guard await manager.waitForSync(id: sync.id)?.status == .done else {
                    throw CLIError(message: "syncs: sync \(sync.name ?? "?") did not end done")
                }
            }
            let elapsed = ContinuousClock.now - started
            let cpu = ProcessCPU.milliseconds() - cpuStarted
            for index in 0..<syncs where try unfenced.store.count(in: "s\(index)") != records {
                throw CLIError(message: "syncs: soup s\(index) does not hold the \(records) accounts")
            }
            // One at a time, a sync runs from the previous one's end (the first from the start)
            // to its own: each of those spans is a sync run alone.
            let ends = spans.withLock { $0.values.compactMap(\.done) }.sorted()
            let longest = zip([started] + ends, ends).map { ($1 - $0).inMilliseconds }.max() ?? 0
            return Round(way: way, ms: elapsed.inMilliseconds, longestSyncMs: longest, cpuMs: cpu)
        }
    }

    /// Every page the syncs save, fetched first, then upserted by id through the store into
    /// `syncs` soups, page by page, one transaction a page: the writer's share alone.
    static func savesAlone(syncs: Int, batchSize: Int, client: RESTClient, logger quiet: Logger) async throws
        -> Double
    {
        var pages: [[JSONObject]] = []
        for try await page in client.query(
            "SELECT Id, Name, LastModifiedDate FROM Account", batchSize: batchSize)
        {
            pages.append(page.records)
        }
        let root =
            FileManager.default.temporaryDirectory.path + "/baton-bench-saves-" + UUID().uuidString.prefix(8)
        defer {
            // Cleanup only: a leftover directory changes no figure.
            try? FileManager.default.removeItem(atPath: root)
        }
        let unfenced = try UnfencedStore.open(directory: try SharedDirectory(path: root), logger: quiet)
        for index in 0..<syncs {
            try unfenced.registerSoup("s\(index)", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        }
        let started = ContinuousClock.now
        for index in 0..<syncs {
            for page in pages {
                try await unfenced.write { transaction in
                    try transaction.upsert(page, into: "s\(index)", externalIdPath: "Id")
                }
            }
        }
        return (ContinuousClock.now - started).inMilliseconds
    }
}

/// This process's CPU time so far, user and system, in milliseconds.
enum ProcessCPU {
    static func milliseconds() -> Double {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        func ms(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return ms(usage.ru_utime) + ms(usage.ru_stime)
    }
}
