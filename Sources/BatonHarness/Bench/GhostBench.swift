import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// Clean resync ghosts of a large soup after a few deletions on the server: the deletions since
/// the last clean (`sObject Get Deleted`) against Mobile Sync's comparison of every id, in the
/// same run, alternating. Each round deletes `deletes` records on the server, dated three
/// minutes back (the delete log answers whole minutes up to the current one), with the last
/// clean ten minutes back, then cleans.
struct GhostBench {
    struct Round: Encodable {
        var way: String
        var requests: Int
        /// Ids the server sent: every id the target selects, or the deletions in the window.
        var idsTransferred: Int
        var ms: Double
        var ghosts: Int
    }

    struct Result {
        var records: Int
        var deletes: Int
        var rounds: [Round]
    }

    static func run(records: Int, deletes: Int = 10, rounds: Int = 3) async throws -> Result {
        var quiet = Logger(label: "baton.bench.ghosts")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "bench"), logger: quiet)
        do {
            let result = try await run(
                server: server, records: records, deletes: deletes, rounds: rounds, logger: quiet)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    static func run(server: RunningServer, records: Int, deletes: Int, rounds: Int, logger quiet: Logger)
        async throws -> Result
    {
        let client = RESTClient(baseURL: server.url, token: "bench")
        let root =
            FileManager.default.temporaryDirectory.path + "/baton-bench-ghosts-" + UUID().uuidString.prefix(8)
        defer {
            // Cleanup only: a leftover directory changes no figure.
            try? FileManager.default.removeItem(atPath: root)
        }
        let unfenced = try UnfencedStore.open(directory: try SharedDirectory(path: root), logger: quiet)
        let manager = SyncManager(
            unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: quiet)
        let ids = try await client.adminSeed(type: "Account", count: records, ageSeconds: 3600)
        let target = try SoqlSyncDownTarget(
            client: client, query: "SELECT Id, Name FROM Account", batchSize: 2000)
        return try await withThrowingTaskGroup(of: Void.self) { group -> Result in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let sync = try await manager.syncDown(target: target, soupName: "accounts", name: "accounts")
            guard await manager.waitForSync(id: sync.id)?.status == .done else {
                throw CLIError(message: "ghosts: the sync down did not end done")
            }
            _ = try await manager.cleanResyncGhosts(id: sync.id)
            // The seed answers up to 1,000 ids: later deletions pick from the soup.
            var remaining = try unfenced.store.query(.all, in: "accounts").compactMap {
                $0.record["Id"]?.stringValue
            }
            if remaining.isEmpty { remaining = ids }
            var measured: [Round] = []
            for _ in 0..<rounds {
                for way in ["full", "incremental"] {
                    let gone = Array(remaining.suffix(deletes))
                    remaining.removeLast(min(deletes, remaining.count))
                    _ = try await client.adminDelete(type: "Account", ids: gone, ageSeconds: 180)
                    // The last clean ten minutes back: its window holds the deletions.
                    try await unfenced.write { transaction in
                        let now = WallClock.nowMillis()
                        try transaction.setGhostCleaningMarks(
                            id: sync.id, coveredUntil: now - 600_000, fullAt: now - 600_000)
                    }
                    try await client.adminResetStats()
                    let before = server.server.requestCount
                    let started = ContinuousClock.now
                    let ghosts = try await manager.cleanResyncGhosts(
                        id: sync.id, incremental: way == "incremental")
                    let elapsed = ContinuousClock.now - started
                    let requests = server.server.requestCount - before
                    let served = Int(
                        try await client.adminStats().value(atPath: "recordsServed.Account")?.intValue ?? 0)
                    guard ghosts == gone.count else {
                        throw CLIError(
                            message: "ghosts: the \(way) clean removed \(ghosts) of \(gone.count) ghosts")
                    }
                    measured.append(
                        Round(
                            way: way, requests: requests, idsTransferred: served, ms: elapsed.inMilliseconds,
                            ghosts: ghosts))
                }
            }
            return Result(records: records, deletes: deletes, rounds: measured)
        }
    }
}
