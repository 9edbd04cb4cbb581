import BatonREST
import BatonStore
import BatonSync
import Foundation
import SOQL

/// Resume waste: records fetched by a stopped-then-restarted sync down minus the records it
/// needed, at several stop points and tie densities. Ideal: only the records sharing the
/// boundary time stamp (`>=` maxTimeStamp asks for them again).
struct ResumeWasteBench {
    struct Case {
        var stopAt: Int
        var tie: Int
        var extra: Int
        var boundaryTies: Int
    }

    static func run(_ env: BenchEnvironment, records: Int) async throws -> [Case] {
        var cases: [Case] = []
        for tie in [1, 10, 100] {
            try await env.reseed(records, tie: tie, bytes: 100)
            for stopAt in [25, 50, 75] {
                let shared = try env.freshDirectory()
                let store = try SharedStore.open(directory: shared, logger: env.quietLogger())
                let manager = SyncManager(
                    store: store, targetFactory: RESTTargetFactory(client: env.client),
                    logger: env.quietLogger())
                let target = try SoqlSyncDownTarget(
                    client: env.client, query: "SELECT Id, Name FROM Account", batchSize: 200)
                try await env.client.adminResetStats()
                let outcome = try await withThrowingTaskGroup(of: Void.self) { group -> Case in
                    group.addTask { try await manager.run() }
                    defer { group.cancelAll() }
                    let updates = await manager.updates()
                    let sync = try await manager.syncDown(target: target, soupName: "accounts", name: "s")
                    for await state in updates where state.id == sync.id && state.progress >= stopAt { break }
                    await manager.stop()
                    await manager.waitUntilStopped()
                    let maxTimeStamp = try await manager.getSyncStatus(id: sync.id)?.maxTimeStamp ?? -1
                    try await manager.restart(restartStoppedSyncs: true)
                    _ = await manager.waitForSync(id: sync.id)
                    let served = try await env.served()
                    // Counted after `served`, since this query is served too.
                    let boundary = try await env.client.queryFirstPage(
                        "SELECT Id FROM Account WHERE LastModifiedDate = \(DateTimeLiteral.format(milliseconds: maxTimeStamp))"
                    ).totalSize
                    return Case(stopAt: stopAt, tie: tie, extra: served - records, boundaryTies: boundary)
                }
                guard try store.count(in: "accounts") == records else {
                    throw CLIError(message: "resume waste: records lost")
                }
                cases.append(outcome)
            }
        }
        return cases
    }
}
