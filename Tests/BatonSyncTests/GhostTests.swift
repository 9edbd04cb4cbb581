import BatonREST
import BatonStore
import BatonSync
import Testing

@Suite("Clean resync ghosts", .timeLimit(.minutes(5)))
struct GhostTests {
    @Test("removes server-deleted records of that sync only, sparing local edits")
    func removesGhosts() async throws {
        try await withSyncFixture { f in
            let accounts = try await f.client.adminSeed(type: "Account", count: 10)
            let contacts = try await f.client.adminSeed(type: "Contact", count: 3)
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 4), soupName: "accounts", name: "acc")
            _ = await f.manager.waitForSync(id: sync.id)
            // Another sync's records in the same soup.
            let other = try await f.manager.syncDown(
                target: try f.soqlTarget("SELECT Id FROM Contact"), soupName: "accounts")
            _ = await f.manager.waitForSync(id: other.id)
            #expect(try f.store.count(in: "accounts") == 13)

            // One ghost is edited locally: it must survive.
            let edited = accounts[2]
            try await f.unfenced.write { transaction in
                guard let entry = try transaction.entry(where: "Id", equals: .string(edited), in: "accounts")
                else { return }
                try transaction.upsert(
                    LocalFlags.markUpdated(entry.record), into: "accounts", entryId: entry.entryId)
            }
            try await f.client.adminDelete(type: "Account", ids: Array(accounts[0..<4]))
            try await f.client.adminDelete(type: "Contact", ids: [contacts[0]])

            let deleted = try await f.manager.cleanResyncGhosts(id: sync.id)
            #expect(deleted == 3)
            let local = try f.local()
            #expect(local.count == 10)
            #expect(local[edited] != nil)
            #expect(local[accounts[0]] == nil && local[accounts[4]] != nil)
            #expect(local[contacts[0]] != nil)  // not this sync's record
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.status == .done)
        }
    }

    @Test("a stop during the id fetch reports failure and deletes nothing")
    func stopDuringGhosts() async throws {
        try await withSyncFixture { f in
            let accounts = try await f.client.adminSeed(type: "Account", count: 6)
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(), soupName: "accounts", name: "acc")
            _ = await f.manager.waitForSync(id: sync.id)
            try await f.client.adminDelete(type: "Account", ids: Array(accounts[0..<3]))
            try await f.client.adminSetFaults(["latencyMs": 5000])
            let held = f.server.server.requestCount + 1
            let manager = f.manager
            let cleaning = Task { try await manager.cleanResyncGhosts(id: sync.id) }
            await f.server.server.waitForRequests(held)
            await f.manager.stop()
            let result = await cleaning.result
            #expect(throws: SyncError.self) { try result.get() }
            if case .failure(let error as SyncError) = result { #expect(error.code == .ghostCleaningStopped) }
            await f.manager.waitUntilStopped()
            #expect(try f.store.count(in: "accounts") == 6)
        }
    }

    @Test("clean resync ghosts applies to sync downs only")
    func syncUpRefused() async throws {
        try await withSyncFixture { f in
            let up = try await f.manager.syncUp(target: try f.upTarget(), soupName: "accounts")
            _ = await f.manager.waitForSync(id: up.id)
            await #expect { try await f.manager.cleanResyncGhosts(id: up.id) } throws: {
                ($0 as? SyncError)?.code == .wrongSyncType
            }
        }
    }

    @Test("a reSync while the sync's ghost cleaning runs is queued behind it, not refused")
    func reSyncBehindGhostCleaning() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 6)
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(), soupName: "accounts", name: "acc")
            _ = await f.manager.waitForSync(id: sync.id)
            try await f.client.adminSetFaults(["latencyMs": 300])
            let held = f.server.server.requestCount + 1
            let manager = f.manager
            let cleaning = Task { try await manager.cleanResyncGhosts(id: sync.id) }
            await f.server.server.waitForRequests(held)
            // The ghost cleaning's id fetch is in flight: a reSync waits for it, then runs.
            let queued = try await f.manager.reSync(id: sync.id)
            #expect(queued.status == .running)
            await #expect { try await f.manager.reSync(id: sync.id) } throws: {
                ($0 as? SyncError)?.code == .alreadyRunning
            }
            #expect(try await cleaning.value == 0)
            let done = await f.manager.waitForSync(id: sync.id)
            #expect(done?.status == .done)
        }
    }
}
