import BatonREST
import BatonStore
import BatonSync
import Testing

@Suite("Several syncs at once", .timeLimit(.minutes(3)))
struct ConcurrentSyncTests {
    /// Three sync downs of 1,000 records each into three soups, 200 a page, 100 ms a request.
    func start(_ f: SyncFixture, log: UpdateLog) async throws -> [SyncState] {
        _ = try await f.client.adminSeed(type: "Account", count: 1000)
        _ = try await f.client.adminSeed(type: "Contact", count: 1000)
        try await f.client.adminSetFaults(["latencyMs": 100])
        var syncs: [SyncState] = []
        for (name, query, soup) in [
            ("a", "SELECT Id, Name, LastModifiedDate FROM Account", "accounts"),
            ("c", "SELECT Id, LastName, LastModifiedDate FROM Contact", "contacts"),
            ("a2", "SELECT Id, Name, LastModifiedDate FROM Account", "accounts2"),
        ] {
            syncs.append(
                try await f.manager.syncDown(
                    target: try f.soqlTarget(query, batchSize: 200), soupName: soup, name: name,
                    onUpdate: log.block))
        }
        return syncs
    }

    /// Each sync's own listener sequence: `running` with a progress that never goes back, then
    /// one `done` at 100.
    func expectOwnSequences(_ log: UpdateLog, _ syncs: [SyncState]) {
        for sync in syncs {
            let mine = log.all.filter { $0.id == sync.id }
            let running = mine.dropLast()
            #expect(running.allSatisfy { $0.status == .running })
            #expect(running.map(\.progress) == running.map(\.progress).sorted())
            #expect(mine.last?.status == .done && mine.last?.progress == 100)
        }
    }

    @Test(
        "one at a time by default; with a concurrency of 3, the sync downs fetch at once, each to done with its own records"
    )
    func overlapping() async throws {
        for concurrency in [1, 3] {
            try await withSyncFixture { f in
                await f.manager.setConcurrency(concurrency)
                let log = UpdateLog()
                let syncs = try await start(f, log: log)
                for sync in syncs { #expect(await f.manager.waitForSync(id: sync.id)?.status == .done) }
                for soup in ["accounts", "contacts", "accounts2"] {
                    #expect(try f.store.count(in: soup) == 1000)
                }
                // Which syncs had saved a page when the first one ended: only it, one at a time;
                // all three, at once (5 pages of 100 ms each leave the others time to start).
                let order = log.all
                let firstDone = try #require(order.firstIndex { $0.status == .done })
                let paging = Set(order[..<firstDone].filter { $0.progress > 0 }.map(\.id))
                #expect(paging == (concurrency == 1 ? [syncs[0].id] : Set(syncs.map(\.id))), "\(concurrency)")
                expectOwnSequences(log, syncs)
                for sync in syncs {
                    let stored = try #require(try SyncState.byId(sync.id, store: f.store))
                    #expect(stored.maxTimeStamp > 0 && stored.status == .done)
                }
            }
        }
    }

    @Test(
        "a stop stops every sync running at once; a restart resumes each from its own mark, losing and duplicating nothing"
    )
    func stopAndResume() async throws {
        try await withSyncFixture { f in
            await f.manager.setConcurrency(3)
            let log = UpdateLog()
            let syncs = try await start(f, log: log)
            // Every sync has saved a page.
            for sync in syncs { _ = await log.first { $0.id == sync.id && $0.progress > 0 } }
            await f.manager.stop()
            for sync in syncs { #expect(await f.manager.waitForSync(id: sync.id)?.status == .stopped) }
            await f.manager.waitUntilStopped()
            let partial = try ["accounts", "contacts", "accounts2"].map { try f.store.count(in: $0) }
            #expect(partial.allSatisfy { $0 > 0 && $0 < 1000 }, "\(partial)")
            try await f.client.adminSetFaults(["latencyMs": 0])
            let resumed = try await f.manager.restart(restartStoppedSyncs: true)
            #expect(Set(resumed.map(\.id)) == Set(syncs.map(\.id)))
            for sync in syncs { #expect(await f.manager.waitForSync(id: sync.id)?.status == .done) }
            for soup in ["accounts", "contacts", "accounts2"] {
                let ids = try f.store.query(.all, in: soup).compactMap { $0.record["Id"]?.stringValue }
                #expect(ids.count == 1000 && Set(ids).count == 1000, "\(soup): \(ids.count)")
            }
        }
    }
}
