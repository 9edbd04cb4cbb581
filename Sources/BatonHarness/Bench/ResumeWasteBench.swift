import BatonREST
import BatonStore
import BatonSync
import Foundation

/// Resume waste: records fetched after a sync down's stop and restart minus the records still
/// missing at the restart, at several stop points and tie densities. A resumed run asks for the
/// ids after the last one saved, so records sharing a stamp cost nothing: ideal 0.
struct ResumeWasteBench {
    struct Case {
        var stopAt: Int
        var tie: Int
        var extra: Int
    }

    static func run(_ env: BenchEnvironment, records: Int) async throws -> [Case] {
        var cases: [Case] = []
        for tie in [1, 10, 100] {
            try await env.reseed(records, tie: tie, bytes: 100)
            for stopAt in [25, 50, 75] {
                let shared = try env.freshDirectory()
                let (store, manager, target) = try env.syncDown(
                    in: shared, query: "SELECT Id, Name FROM Account", batchSize: 200)
                let outcome = try await withThrowingTaskGroup(of: Void.self) { group -> Case in
                    group.addTask { try await manager.run() }
                    defer { group.cancelAll() }
                    let updates = await manager.updates()
                    let sync = try await manager.syncDown(target: target, soupName: "accounts", name: "s")
                    for await state in updates where state.id == sync.id && state.progress >= stopAt { break }
                    await manager.stop()
                    await manager.waitUntilStopped()
                    // Waste is what the restart fetches beyond what is still missing (a page in
                    // flight at the stop is dropped, so it is missing and fetched again). The
                    // restarted run fetches its whole query, whose size the sync state records;
                    // the server's own count could still grow from the dropped request.
                    let missing = records - (try store.count(in: "accounts"))
                    try await manager.restart(restartStoppedSyncs: true)
                    _ = await manager.waitForSync(id: sync.id)
                    let fetched = try await manager.getSyncStatus(id: sync.id)?.totalSize ?? -1
                    return Case(stopAt: stopAt, tie: tie, extra: fetched - missing)
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
