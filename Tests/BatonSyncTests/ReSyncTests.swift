import BatonREST
import BatonStore
import BatonSync
import SOQL
import Testing

@Suite("reSync, names and errors", .timeLimit(.minutes(5)))
struct ReSyncTests {
    @Test("reSync after done fetches only records changed since, by id and by name, and the overlap again")
    func reSyncAfterDone() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 20, ageSeconds: 3600)
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 5), soupName: "accounts", name: "acc")
            let done = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(done.status == .done && done.progress == 100 && done.totalSize == 20)
            #expect(try f.store.count(in: "accounts") == 20)

            try await f.client.adminTouch(
                type: "Account", ids: Array(ids[3..<6]), fields: ["Name": "changed"])
            try await f.client.adminResetStats()
            try await f.manager.reSync(id: sync.id)
            let again = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(again.status == .done)
            #expect(again.totalSize == 3)
            #expect(try await f.served() == 3)
            let local = try f.local()
            #expect(ids[3..<6].allSatisfy { local[$0]?["Name"] == "changed" })
            #expect(again.maxTimeStamp > done.maxTimeStamp)

            // By name, with nothing new: the three changed within the overlap (the last ten
            // minutes) are fetched again, in case one committed late, and nothing is rewritten.
            let written = try f.written()
            try await f.client.adminResetStats()
            try await f.manager.reSync(name: "acc")
            #expect(await f.manager.waitForSync(id: sync.id)?.totalSize == 3)
            #expect(try await f.served() == 3)
            #expect(try f.written() == written)
        }
    }

    @Test("a wrong name, a running sync and calls while stopped are typed errors")
    func errors() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 6)
            await #expect { try await f.manager.reSync(name: "nope") } throws: {
                ($0 as? SyncError)?.code == .unknownSync
            }
            await #expect { try await f.manager.reSync(id: 999) } throws: {
                ($0 as? SyncError)?.code == .unknownSync
            }

            try await f.client.adminSetFaults(["latencyMs": 100])
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "slow")
            await #expect { try await f.manager.reSync(id: sync.id) } throws: {
                ($0 as? SyncError)?.code == .alreadyRunning
            }
            await #expect {
                try await f.manager.syncDown(target: try f.soqlTarget(), soupName: "accounts", name: "slow")
            } throws: { ($0 as? StoreError)?.code == .duplicateSyncName }

            await f.manager.stop()
            await f.manager.waitUntilStopped()
            let target = try f.soqlTarget()
            await #expect {
                try await f.manager.syncDown(target: target, soupName: "accounts")
            } throws: { ($0 as? SyncError)?.code == .notAcceptingSyncs }
            await #expect {
                try await f.manager.syncUp(target: try f.upTarget(), soupName: "accounts")
            } throws: { ($0 as? SyncError)?.code == .notAcceptingSyncs }
            await #expect {
                try await f.manager.cleanResyncGhosts(id: sync.id)
            } throws: { error in
                guard let error = error as? SyncError else { return false }
                return error.code == .notAcceptingSyncs && error.message.contains("restart")
            }
        }
    }

    @Test("an invalid query is refused up front")
    func invalidQuery() async throws {
        try await withSyncFixture { f in
            #expect { try f.soqlTarget("SELECT FROM") } throws: { ($0 as? SyncError)?.code == .invalidTarget }
        }
    }
}

@Suite("Merge modes", .timeLimit(.minutes(5)))
struct MergeModeTests {
    func editLocally(_ f: SyncFixture, id: String, name: String) async throws {
        try await f.unfenced.write { transaction in
            guard var entry = try transaction.entry(where: "Id", equals: .string(id), in: "accounts") else {
                return
            }
            entry.record["Name"] = .string(name)
            try transaction.upsert(
                LocalFlags.markUpdated(entry.record), into: "accounts", entryId: entry.entryId)
        }
    }

    @Test(
        "leaveIfChanged keeps local edits on sync down; overwrite replaces them",
        arguments: [MergeMode.leaveIfChanged, .overwrite])
    func syncDownMerge(mode: MergeMode) async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 4)
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(), options: SyncOptions(mergeMode: mode), soupName: "accounts",
                name: "m")
            _ = await f.manager.waitForSync(id: sync.id)
            try await editLocally(f, id: ids[0], name: "local edit")
            try await f.client.adminTouch(
                type: "Account", ids: [ids[0], ids[1]], fields: ["Name": "server edit"])
            try await f.manager.reSync(id: sync.id)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            let local = try f.local()
            if mode == .leaveIfChanged {
                #expect(local[ids[0]]?["Name"] == "local edit")
                #expect(local[ids[0]].map(LocalFlags.isDirty) == true)
            } else {
                #expect(local[ids[0]]?["Name"] == "server edit")
                #expect(local[ids[0]].map(LocalFlags.isDirty) == false)
            }
            #expect(local[ids[1]]?["Name"] == "server edit")
        }
    }
}
