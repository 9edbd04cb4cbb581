import BatonREST
import BatonStore
import BatonSync
import Testing

/// The updates a sync's listener receives, case by case, exactly as Mobile Sync 7.1 sends them
/// (`SyncTask`, `SyncDownTask`, `SyncUpTask`, `AdvancedSyncUpTask`, `CleanSyncGhostsTask` and
/// `SyncManager` of SalesforceMobileSDK-Android v7.1.2):
/// - `running 0/-1` when the sync is submitted (queued or not), never `new`;
/// - a sync down reports `running 0/N` once the first fetch knows the size N, before saving;
/// - progress only while it is below 100%, then `done 100/N`;
/// - `stopped` / `failed` keep the last progress and size;
/// - on a stop the running sync reports `stopped` before the queued ones;
/// - clean resync ghosts reports nothing to the sync's listener.
@Suite("The listener contract (Mobile Sync 7.1)", .timeLimit(.minutes(5)))
struct ListenerContractTests {
    /// "status progress/totalSize" for each update.
    static func render(_ states: [SyncState]) -> [String] {
        states.map { "\($0.status.rawValue) \($0.progress)/\($0.totalSize)" }
    }

    func down(_ f: SyncFixture, _ log: UpdateLog, batchSize: Int, name: String = "down") async throws
        -> SyncState
    {
        let sync = try await f.manager.syncDown(
            target: try f.soqlTarget(batchSize: batchSize), soupName: "accounts", name: name,
            onUpdate: log.block)
        return try #require(await f.manager.waitForSync(id: sync.id))
    }

    @Test("sync down: the size before any save, progress below 100%, then done")
    func syncDown() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 6)
            let log = UpdateLog()
            #expect(try await down(f, log, batchSize: 2).status == .done)
            #expect(
                Self.render(log.all) == [
                    "running 0/-1", "running 0/6", "running 33/6", "running 66/6", "done 100/6",
                ])
        }
    }

    @Test("sync down of one page, and of nothing")
    func syncDownOnePageAndEmpty() async throws {
        try await withSyncFixture { f in
            let empty = UpdateLog()
            #expect(try await down(f, empty, batchSize: 10, name: "empty").status == .done)
            #expect(Self.render(empty.all) == ["running 0/-1", "running 0/0", "done 100/0"])

            try await f.client.adminSeed(type: "Account", count: 10)
            let one = UpdateLog()
            #expect(try await down(f, one, batchSize: 10, name: "one").status == .done)
            #expect(Self.render(one.all) == ["running 0/-1", "running 0/10", "done 100/10"])
        }
    }

    @Test("sync up: 0/-1, then the count, then each record below 100%, in batches or not", arguments: [1, 4])
    func syncUp(batchSize: Int) async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            for index in 0..<6 {
                try f.unfenced.upsert(
                    LocalFlags.markCreated(["Name": .string("new \(index)")]), into: "accounts")
            }
            let log = UpdateLog()
            let sync = try await f.manager.syncUp(
                target: try f.upTarget(batchSize: batchSize), soupName: "accounts", onUpdate: log.block)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(
                Self.render(log.all) == [
                    "running 0/-1", "running 0/6", "running 16/6", "running 33/6", "running 50/6",
                    "running 66/6", "running 83/6", "done 100/6",
                ])
        }
    }

    @Test("reSync after done: the size starts unknown again; clean resync ghosts tells the listener nothing")
    func reSyncAndGhosts() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 4, ageSeconds: 3600)
            let first = UpdateLog()
            let sync = try await down(f, first, batchSize: 2)
            #expect(Self.render(first.all) == ["running 0/-1", "running 0/4", "running 50/4", "done 100/4"])

            try await f.client.adminTouch(type: "Account", ids: Array(ids.prefix(3)))
            let again = UpdateLog()
            try await f.manager.reSync(id: sync.id, onUpdate: again.block)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(Self.render(again.all) == ["running 0/-1", "running 0/3", "running 66/3", "done 100/3"])

            _ = try await f.client.adminDelete(type: "Account", ids: [ids[3]])
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1)
            #expect(Self.render(again.all).count == 4)
            #expect(Self.render(first.all).count == 4)
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.status == .done)
        }
    }

    @Test(
        "stop with one sync running and one queued: the running one's stopped comes first; restart resumes both"
    )
    func stopWithQueuedAndRestart() async throws {
        try await withSyncFixture { f in
            // Mobile Sync's one at a time: the second waits in the queue.
            await f.manager.setConcurrency(1)
            try await f.client.adminSeed(type: "Account", count: 10)
            try await f.client.adminSeed(type: "Contact", count: 4)
            try await f.client.adminSetFaults(["latencyMs": 150])
            let log = UpdateLog()
            let requestsBefore = f.server.server.requestCount
            let running = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "running",
                onUpdate: log.block)
            let queued = try await f.manager.syncDown(
                target: try f.soqlTarget("SELECT Id, Name FROM Contact", batchSize: 2), soupName: "contacts",
                name: "queued", onUpdate: log.block)
            // Stop while the third page's request (sent as the second began saving) is in flight:
            // the fourth request, after the one for the newest stamp and two pages.
            _ = await log.first { $0.id == running.id && $0.progress == 40 }
            await f.server.server.waitForRequests(requestsBefore + 4)
            await f.manager.stop()
            await f.manager.waitUntilStopped()

            let seen = log.all.map { "\($0.name ?? "") \(Self.render([$0])[0])" }
            #expect(
                seen == [
                    "running running 0/-1", "queued running 0/-1", "running running 0/10",
                    "running running 20/10", "running running 40/10", "running stopped 40/10",
                    "queued stopped 0/-1",
                ])

            try await f.client.adminClearFaults()
            let restartLog = UpdateLog()
            let restarted = try await f.manager.restart(restartStoppedSyncs: true, onUpdate: restartLog.block)
            #expect(restarted.map(\.id) == [running.id, queued.id])
            #expect(await f.manager.waitForSync(id: running.id)?.status == .done)
            #expect(await f.manager.waitForSync(id: queued.id)?.status == .done)
            // The restart resumes after the last id saved: records 5-10.
            let resumed = restartLog.all.map { "\($0.name ?? "") \(Self.render([$0])[0])" }
            #expect(
                resumed == [
                    "running running 0/-1", "queued running 0/-1", "running running 0/6",
                    "running running 33/6", "running running 66/6", "running done 100/6",
                    "queued running 0/4", "queued running 50/4", "queued done 100/4",
                ])
        }
    }

    @Test("failure: at the first fetch, and after some pages, with the progress where it was")
    func failure() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 6)
            // The first fetch fails on every attempt (the client tries 3 times).
            try await f.client.adminSetFaults(["failNext": 3])
            let bad = UpdateLog()
            let broken = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "broken",
                onUpdate: bad.block)
            #expect(await f.manager.waitForSync(id: broken.id)?.status == .failed)
            #expect(Self.render(bad.all) == ["running 0/-1", "failed 0/-1"])
            #expect(bad.all.last?.error?.contains("SERVER_UNAVAILABLE") == true)

            // The request for the newest stamp and page 1's pass; page 2's fails on every attempt.
            try await f.client.adminSetFaults(["passNext": 2, "failNext": 3])
            let log = UpdateLog()
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "midway",
                onUpdate: log.block)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .failed)
            #expect(Self.render(log.all) == ["running 0/-1", "running 0/6", "running 33/6", "failed 33/6"])

            // Run again: the last failure's error stays while it runs (as Mobile Sync keeps it);
            // done clears it.
            try await f.client.adminClearFaults()
            let again = UpdateLog()
            try await f.manager.reSync(id: sync.id, onUpdate: again.block)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(again.all.first?.error?.contains("SERVER_UNAVAILABLE") == true)
            #expect(again.all.last?.status == .done && again.all.last?.error == nil)
        }
    }
}
