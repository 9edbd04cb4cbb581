import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonTestSupport
import Logging
import Testing

@testable import BatonSync

/// A stop that lands while a page is being saved rolls that page back at once (the save checks
/// for it before each record), instead of waiting for the save to finish; the restart fetches
/// the page again and nothing is lost.
@Suite("A stop during a page's save", .timeLimit(.minutes(3)))
struct StopDuringSaveTests {
    @Test("the page in the save rolls back; the sync ends stopped at the page before; restart completes it")
    func stopRollsBackTheSave() async throws {
        let temp = try TemporaryDirectory()
        var quiet = Logger(label: "test.stop-during-save")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "t"), logger: quiet)
        defer { Task { await server.stop() } }
        let client = RESTClient(baseURL: server.url, token: server.token)
        _ = try await client.adminSeed(type: "Account", count: 6_000, timeStamps: 6_000, bytes: 300)
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: temp.path + "/d"), logger: quiet)
        let store = unfenced.store
        // The hook runs on the manager just before a page's save; at the second page it asks for
        // a stop, which the manager carries out as soon as it waits for that save.
        let box = Locked<(manager: SyncManager?, pages: Int, savedBefore: Int?)>((nil, 0, nil))
        let hooks = SyncHooks(pageWillSave: { _, _ in
            let manager = box.withLock { box -> SyncManager? in
                box.pages += 1
                guard box.pages == 2 else { return nil }
                box.savedBefore = (try? store.count(in: "accounts")) ?? -1
                return box.manager
            }
            if let manager { Task { await manager.stop() } }
        })
        let manager = SyncManager(
            store: store, access: unfenced.access, targetFactory: RESTTargetFactory(client: client),
            hooks: hooks,
            logger: quiet)
        box.withLock { $0.manager = manager }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let target = try SoqlSyncDownTarget(
                client: client, query: "SELECT Id, Name, Description FROM Account", batchSize: 2_000)
            let sync = try await manager.syncDown(target: target, soupName: "accounts")
            let stopped = try #require(await manager.waitForSync(id: sync.id))
            #expect(stopped.status == .stopped)
            let savedBefore = try #require(box.withLock { $0.savedBefore })
            #expect(savedBefore > 0)
            // The second page is not in the store: its save rolled back.
            #expect(try store.count(in: "accounts") == savedBefore)
            #expect(try await manager.getSyncStatus(id: sync.id)?.progress ?? 100 < 100)

            let restarted = try await manager.restart(restartStoppedSyncs: true)
            #expect(restarted.map(\.id) == [sync.id])
            let done = try #require(await manager.waitForSync(id: sync.id))
            #expect(done.status == .done)
            let serverIds = Set(
                try await client.adminRecords(type: "Account").compactMap { $0["Id"]?.stringValue })
            let localIds = Set(
                try store.query(.all, in: "accounts").compactMap { $0.record["Id"]?.stringValue })
            #expect(serverIds.count == 6_000 && localIds == serverIds)
        }
        try unfenced.close()
    }
}
