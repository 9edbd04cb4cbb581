import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// Sync up of many local creates: records per second against the server's own rate for the
/// same records through sObject Collections (batches of 200, Salesforce's limit, posted one
/// after another by a bare client), in the same run, alternating. Both create `records`
/// accounts of the same shape, each round into a server emptied of the last round's.
struct SyncUpBench {
    /// Salesforce's most records in one sObject Collections request, and the sync up's batch.
    static let batchSize = 200

    struct Round: Encodable {
        var way: String
        var ms: Double
        var recordsPerSec: Double
    }

    struct Result {
        var records: Int
        var batchSize: Int
        var rounds: [Round]
    }

    static func run(records: Int = 5_000, rounds: Int = 3) async throws -> Result {
        var quiet = Logger(label: "baton.bench.syncup")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "bench"), logger: quiet)
        do {
            let client = RESTClient(baseURL: server.url, token: "bench")
            var measured: [Round] = []
            for round in 0..<rounds {
                for way in ["collections", "syncUp"] {
                    let ms =
                        way == "collections"
                        ? try await collections(records: records, round: round, client: client)
                        : try await syncUp(records: records, round: round, client: client, logger: quiet)
                    measured.append(
                        Round(way: way, ms: ms, recordsPerSec: Double(records) * 1000 / max(ms, 0.001)))
                    let created = try await client.adminRecords(type: "Account")
                    guard created.count == records else {
                        throw CLIError(
                            message:
                                "sync up: the server holds \(created.count) accounts after \(way), not \(records)"
                        )
                    }
                    _ = try await client.adminDelete(
                        type: "Account", ids: created.compactMap { $0["Id"]?.stringValue })
                }
            }
            await server.stop()
            return Result(records: records, batchSize: Self.batchSize, rounds: measured)
        } catch {
            await server.stop()
            throw error
        }
    }

    /// An account as an app would create it.
    static func account(_ index: Int, round: Int) -> JSONObject {
        [
            "Name": .string("Bench account \(round)-\(index)"),
            "Description": .string("created by baton bench"),
        ]
    }

    /// The server's rate: the same accounts posted 200 at a time, one request after another.
    static func collections(records: Int, round: Int, client: RESTClient) async throws -> Double {
        let accounts = (0..<records).map { account($0, round: round) }
        let started = ContinuousClock.now
        for start in stride(from: 0, to: records, by: Self.batchSize) {
            let batch = Array(accounts[start..<min(records, start + Self.batchSize)])
            let results = try await client.compositeCreate(type: "Account", records: batch)
            guard results.allSatisfy(\.success) else {
                throw CLIError(message: "sync up: the server refused a create of the baseline")
            }
        }
        return (ContinuousClock.now - started).inMilliseconds
    }

    /// The same accounts created locally (one transaction, before the clock starts), then one
    /// sync up until done; every local record must be clean after it.
    static func syncUp(records: Int, round: Int, client: RESTClient, logger quiet: Logger) async throws
        -> Double
    {
        let root =
            FileManager.default.temporaryDirectory.path + "/baton-bench-syncup-" + UUID().uuidString.prefix(8)
        defer {
            // Cleanup only: a leftover directory changes no figure.
            try? FileManager.default.removeItem(atPath: root)
        }
        let unfenced = try UnfencedStore.open(directory: try SharedDirectory(path: root), logger: quiet)
        try unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        try await unfenced.write { transaction in
            for index in 0..<records {
                try transaction.upsert(LocalFlags.markCreated(account(index, round: round)), into: "accounts")
            }
        }
        let manager = SyncManager(
            unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: quiet)
        let target = try RESTSyncUpTarget(
            client: client, objectType: "Account", createFieldlist: ["Name", "Description"])
        return try await withThrowingTaskGroup(of: Void.self) { group -> Double in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let started = ContinuousClock.now
            let sync = try await manager.syncUp(target: target, soupName: "accounts", name: "up")
            guard let final = await manager.waitForSync(id: sync.id), final.status == .done else {
                throw CLIError(message: "sync up: the sync did not end done")
            }
            let elapsed = (ContinuousClock.now - started).inMilliseconds
            let dirty = try unfenced.store.query(.all, in: "accounts").filter {
                LocalFlags.isDirty($0.record)
            }
            guard dirty.isEmpty, final.refusedCount == 0 else {
                throw CLIError(message: "sync up: \(dirty.count) records were left dirty")
            }
            return elapsed
        }
    }
}
