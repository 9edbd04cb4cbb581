import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// What the guarantee of ``SyncDownPosition`` costs: records fetched by each incremental run
/// against the records that changed since the previous run (the least a run must fetch), under
/// each server clock. A run fetches again what changed within the overlap (10 minutes) before
/// the previous run started, so runs close together pay for the edits of the runs before them;
/// an idle run pays for the last overlap's edits once more.
struct IncrementalBench {
    struct Run: Encodable {
        var clock: String
        /// The run's number after the first full sync (`idle` for the last, after no change).
        var run: String
        var changed: Int
        var fetched: Int
        var extra: Int
    }

    /// Every clock: `records` accounts an hour old, a first full sync, `rounds` runs each after
    /// one server transaction changed `changes` records, then an idle run.
    static func run(records: Int, rounds: Int = 5, changes: Int = 100) async throws -> [Run] {
        var runs: [Run] = []
        for clock in ServerClock.allCases {
            runs += try await run(clock: clock, records: records, rounds: rounds, changes: changes)
        }
        return runs
    }

    static func run(clock: ServerClock, records: Int, rounds: Int, changes: Int) async throws -> [Run] {
        var quiet = Logger(label: "baton.bench.incremental")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "bench", clock: clock), logger: quiet)
        do {
            let runs = try await run(
                server: server, clock: clock, records: records, rounds: rounds, changes: changes,
                logger: quiet)
            await server.stop()
            return runs
        } catch {
            await server.stop()
            throw error
        }
    }

    static func run(
        server: RunningServer, clock: ServerClock, records: Int, rounds: Int, changes: Int,
        logger quiet: Logger
    ) async throws -> [Run] {
        let client = RESTClient(baseURL: server.url, token: "bench")
        let root =
            FileManager.default.temporaryDirectory.path + "/baton-bench-inc-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let unfenced = try UnfencedStore.open(directory: try SharedDirectory(path: root), logger: quiet)
        let manager = SyncManager(
            unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: quiet)
        try await client.adminSeed(type: "Account", count: records, ageSeconds: 3600)
        let target = try SoqlSyncDownTarget(
            client: client, query: "SELECT Id, Name, Rating__c FROM Account", batchSize: 2000)
        return try await withThrowingTaskGroup(of: Void.self) { group -> [Run] in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let sync = try await manager.syncDown(target: target, soupName: "accounts", name: "accounts")
            _ = await manager.waitForSync(id: sync.id)
            var runs: [Run] = []
            for round in 0...rounds {
                let idle = round == rounds
                let changed =
                    idle
                    ? []
                    : try await client.adminTouch(
                        type: "Account", count: changes, fields: ["Rating__c": .string("r\(round)")])
                try await client.adminResetStats()
                _ = try await manager.reSync(id: sync.id)
                let state = await manager.waitForSync(id: sync.id)
                guard state?.status == .done else {
                    throw CLIError(message: "incremental: a run ended \(state?.status.rawValue ?? "unknown")")
                }
                let fetched = Int(
                    try await client.adminStats().value(atPath: "recordsServed.Account")?.intValue ?? 0)
                let distinct = Set(changed).count
                runs.append(
                    Run(
                        clock: clock.rawValue, run: idle ? "idle" : String(round + 1), changed: distinct,
                        fetched: fetched, extra: fetched - distinct))
                try await checkSame(client, unfenced.store)
            }
            return runs
        }
    }

    /// The store holds every account as the server has it: the bench measures a run that
    /// missed nothing.
    static func checkSame(_ client: RESTClient, _ store: SharedStore) async throws {
        func copies(_ records: [JSONObject]) -> [String: [JSONValue]] {
            Dictionary(
                records.compactMap { record in
                    record["Id"]?.stringValue.map {
                        ($0, ["Name", "Rating__c", "LastModifiedDate"].map { record[$0] ?? .null })
                    }
                }, uniquingKeysWith: { first, _ in first })
        }
        let server = copies(try await client.adminRecords(type: "Account"))
        let local = copies(try store.query(.all, in: "accounts").map(\.record))
        guard server == local else {
            throw CLIError(message: "incremental: the store does not hold the server's accounts")
        }
    }
}
