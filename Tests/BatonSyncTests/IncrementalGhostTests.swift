import BatonREST
import BatonStore
import BatonSync
import Testing

@Suite("Clean resync ghosts from the server's deletions", .timeLimit(.minutes(5)))
struct IncrementalGhostTests {
    static let minute: Int64 = 60_000

    @Test(
        "the plan: a full comparison unless asked for incremental, first, and once a day; the deletions since otherwise"
    )
    func plan() {
        typealias G = GhostCleaning
        #expect(
            G.plan(coveredUntil: nil, fullAt: nil, now: 10, incremental: true) == .fullComparison(.firstClean)
        )
        #expect(
            G.plan(coveredUntil: 5, fullAt: nil, now: 10, incremental: true) == .fullComparison(.firstClean))
        #expect(
            G.plan(coveredUntil: 5, fullAt: 1, now: 10, incremental: false)
                == .fullComparison(.notIncremental))
        #expect(G.plan(coveredUntil: 5, fullAt: 1, now: 10, incremental: true) == .deletionsSince(5))
        #expect(
            G.plan(coveredUntil: 5, fullAt: 1, now: 1 + G.fullInterval, incremental: true)
                == .fullComparison(.due))
        #expect(G.marksAfterFull(serverTime: 100_000, overlap: 5_000)! == (95_000, 100_000))
        #expect(G.marksAfterFull(serverTime: nil, overlap: 5_000) == nil)
    }

    /// 30 accounts synced down and cleaned once (a full comparison, which sets the marks), the
    /// marks then moved ten minutes back: a clean that ran ten minutes ago.
    func syncedAndCleaned(_ f: SyncFixture) async throws -> (sync: SyncState, ids: [String]) {
        let ids = try await f.client.adminSeed(type: "Account", count: 30)
        let sync = try await f.manager.syncDown(
            target: try f.soqlTarget("SELECT Id, Name, LastModifiedDate FROM Account"), soupName: "accounts",
            name: "acc")
        #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
        #expect(try await f.manager.cleanResyncGhosts(id: sync.id, incremental: true) == 0)
        let cleaned = try #require(try SyncState.byId(sync.id, store: f.store))
        let covered = try #require(cleaned.ghostsCoveredUntil)
        let fullAt = try #require(cleaned.ghostsFullAt)
        #expect(covered <= fullAt)
        try await f.unfenced.write { transaction in
            try transaction.setGhostCleaningMarks(
                id: sync.id, coveredUntil: covered - 10 * Self.minute, fullAt: fullAt - 10 * Self.minute)
        }
        return (cleaned, ids)
    }

    func markDirty(_ f: SyncFixture, _ id: String) async throws {
        try await f.unfenced.write { transaction in
            let entry = try #require(try transaction.entry(where: "Id", equals: .string(id), in: "accounts"))
            try transaction.upsert(
                LocalFlags.markUpdated(entry.record), into: "accounts", entryId: entry.entryId)
        }
    }

    @Test(
        "the deletions since the last clean, in one request: ghosts go, a local edit stays, the window moves on"
    )
    func incremental() async throws {
        try await withSyncFixture { f in
            let (sync, ids) = try await syncedAndCleaned(f)
            try await markDirty(f, ids[3])
            _ = try await f.client.adminDelete(type: "Account", ids: Array(ids[0..<4]), ageSeconds: 180)
            let before = f.server.server.requestCount
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id, incremental: true) == 3)
            #expect(f.server.server.requestCount - before == 1, "one getDeleted")
            #expect(try f.store.count(in: "accounts") == 27)
            let local = try f.local()
            #expect(local[ids[3]] != nil && local[ids[0]] == nil)
            let after = try #require(try SyncState.byId(sync.id, store: f.store))
            // Covered up to the server's current minute; the full comparison's date unchanged.
            let now = WallClock.nowMillis()
            #expect(try #require(after.ghostsCoveredUntil) > now - 2 * Self.minute)
            #expect(after.ghostsFullAt == sync.ghostsFullAt.map { $0 - 10 * Self.minute })
            // At once again: the window is too short to ask for, and nothing is asked.
            let again = f.server.server.requestCount
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id, incremental: true) == 0)
            #expect(f.server.server.requestCount == again)
        }
    }

    @Test("a window the server no longer holds (its delete log purged) falls back to comparing every id")
    func expiredWindow() async throws {
        try await withSyncFixture { f in
            let (sync, ids) = try await syncedAndCleaned(f)
            _ = try await f.client.adminDelete(type: "Account", ids: Array(ids[0..<2]), ageSeconds: 180)
            try await f.client.adminPurgeDeleted(type: "Account")
            let before = f.server.server.requestCount
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id, incremental: true) == 2)
            // The refused getDeleted, the server's clock, then the ids.
            #expect(f.server.server.requestCount - before >= 3)
            #expect(try f.store.count(in: "accounts") == 28)
            let after = try #require(try SyncState.byId(sync.id, store: f.store))
            #expect(try #require(after.ghostsFullAt) > WallClock.nowMillis() - Self.minute)
        }
    }

    @Test(
        "without incremental, every id is compared, as Mobile Sync does: a deletion of this minute goes too")
    func fullByDefault() async throws {
        try await withSyncFixture { f in
            let (sync, ids) = try await syncedAndCleaned(f)
            _ = try await f.client.adminDelete(type: "Account", ids: [ids[0]])
            // Incremental: deleted in the server's current minute, it is not answered yet (unless
            // the minute turned between the deletion and the request).
            let early = try await f.manager.cleanResyncGhosts(id: sync.id, incremental: true)
            #expect(early <= 1)
            let before = f.server.server.requestCount
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1 - early)
            #expect(f.server.server.requestCount - before >= 2, "the clock, then every id")
            #expect(try f.store.count(in: "accounts") == 29)
        }
    }
}
