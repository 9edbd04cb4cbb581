import BatonREST
import BatonServer
import BatonStore
import BatonSync
import SOQL
import Testing

/// A stop that lands while a page is being saved ends the save at the next record instead of
/// finishing the page: a sorted page keeps what it saved (and resumes after it), an unsorted
/// or empty prefix keeps nothing of the page.
@Suite("Stop during a page's save", .timeLimit(.minutes(5)))
struct StopDuringSaveTests {
    static let records: [JSONObject] = (0..<8).map { index in
        ["Id": .string("001S0000000000\(index)AAA"), "Name": .string("saved \(index)")]
    }

    /// A sync down created (its soup registered) but not run, and the page's destination.
    static func created(_ f: SyncFixture) async throws -> (SyncState, SyncManager.PageWrite) {
        let sync = try await f.manager.createSyncDown(target: try f.soqlTarget(), soupName: "accounts")
        let page = SyncManager.PageWrite(
            soupName: "accounts", syncId: sync.id, leaveIfChanged: false, idField: "Id", children: nil)
        return (sync, page)
    }

    /// `sync` moved on to `progress` and `stamp`.
    static func moved(_ sync: SyncState, progress: Int, stamp: Int64) -> SyncState {
        var moved = sync
        moved.progress = progress
        moved.maxTimeStamp = stamp
        return moved
    }

    @Test("interrupted after three records: the three commit with the state given for them")
    func prefixCommits() async throws {
        try await withSyncFixture { f in
            let (sync, page) = try await Self.created(f)
            let whole = Self.moved(sync, progress: 80, stamp: 8_000)
            let afterThree = Self.moved(sync, progress: 30, stamp: 3_000)
            let asked = try await f.unfenced.access.write { transaction -> ([Int], SyncManager.SavedPage) in
                var checks = 0
                var asked: [Int] = []
                let saved = try SyncManager.writePage(
                    Self.records, page, in: transaction,
                    interrupted: {
                        checks += 1
                        return checks > 3
                    },
                    stateAfter: { count in
                        asked.append(count)
                        return count == Self.records.count ? whole : afterThree
                    })
                return (asked, saved)
            }
            #expect(asked.0 == [3])
            #expect(asked.1.records == 3)
            #expect(asked.1.state == afterThree)
            #expect(Set(try f.local().keys) == Set(Self.records.prefix(3).map { $0["Id"]!.stringValue! }))
            let persisted = try #require(try await f.manager.getSyncStatus(id: sync.id))
            #expect(persisted.progress == 30)
            #expect(persisted.maxTimeStamp == 3_000)
        }
    }

    @Test("interrupted with no state for the prefix: nothing of the page stays")
    func noStateRollsBack() async throws {
        try await withSyncFixture { f in
            let (sync, page) = try await Self.created(f)
            await #expect(throws: SyncInterrupted.self) {
                try await f.unfenced.access.write { transaction in
                    var checks = 0
                    _ = try SyncManager.writePage(
                        Self.records, page, in: transaction,
                        interrupted: {
                            checks += 1
                            return checks > 5
                        },
                        stateAfter: { count in
                            count == Self.records.count ? Self.moved(sync, progress: 80, stamp: 8_000) : nil
                        })
                }
            }
            #expect(try f.store.count(in: "accounts") == 0)
            #expect(try await f.manager.getSyncStatus(id: sync.id) == sync)
        }
    }

    @Test("never interrupted: every record and the whole page's state")
    func wholePage() async throws {
        try await withSyncFixture { f in
            let (sync, page) = try await Self.created(f)
            let whole = Self.moved(sync, progress: 80, stamp: 8_000)
            let saved = try await f.unfenced.access.write { transaction in
                try SyncManager.writePage(
                    Self.records, page, in: transaction, interrupted: { false },
                    stateAfter: { $0 == Self.records.count ? whole : nil })
            }
            #expect(saved.records == Self.records.count)
            #expect(try f.store.count(in: "accounts") == Self.records.count)
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.progress == 80)
        }
    }

    /// Syncs 30 accounts in pages of 10 and stops while page 2's save waits for SQLite's lock,
    /// held from outside as a shell's BEGIN IMMEDIATE would; `cut` ends that save early.
    static func stopWhileSaveWaits(cut: Bool) async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 30)
            try await f.client.adminSetFaults(["latencyMs": 200])
            let log = UpdateLog()
            let requestsBefore = f.server.server.requestCount
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 10), soupName: "accounts", onUpdate: log.block)
            // Page 1 committed; page 2 is on its way (200 ms). Take the lock, then wait for the
            // request for page 3 (the fourth, after the one for the newest stamp): it is sent
            // once page 2's save has begun, which now waits.
            _ = await log.first { $0.progress == 33 }
            let lock = try ForeignWriteLock(path: f.store.directory.storePath)
            await f.server.server.waitForRequests(requestsBefore + 4)
            await f.manager.stop()
            if cut { #expect(await f.manager.endPageSaveEarly()) }
            lock.release()
            await f.manager.waitUntilStopped()

            // Cut before its first record, the page keeps nothing; else it is finished.
            let kept = cut ? 10 : 20
            let stopped = try #require(try await f.manager.getSyncStatus(id: sync.id))
            #expect(stopped.status == .stopped)
            #expect(stopped.progress == kept * 100 / 30)
            #expect(Set(try f.local().keys) == Set(ids.prefix(kept)))
            let last = try #require(try await f.client.get(type: "Account", id: ids[kept - 1]))
            #expect(
                stopped.maxTimeStamp
                    == DateTimeLiteral.milliseconds(last["LastModifiedDate"]?.stringValue ?? ""))

            try await f.client.adminClearFaults()
            try await f.manager.restart(restartStoppedSyncs: true)
            let final = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(final.status == .done)
            #expect(final.totalSize == 30 - kept)  // after the last id kept: nothing saved comes again
            #expect(try f.store.count(in: "accounts") == 30)
        }
    }

    @Test("a stop while a page's save waits for SQLite's lock: the page is finished")
    func stopFinishesPage() async throws {
        try await Self.stopWhileSaveWaits(cut: false)
    }

    @Test("a stop that ends the waiting save early: nothing of that page, the restart fetches it")
    func stopEndsSaveEarly() async throws {
        try await Self.stopWhileSaveWaits(cut: true)
    }

    @Test("endPageSaveEarly without a stop does nothing")
    func cutNeedsStop() async throws {
        try await withSyncFixture { f in
            _ = try await f.client.adminSeed(type: "Account", count: 30)
            let log = UpdateLog()
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 10), soupName: "accounts", onUpdate: log.block)
            _ = await log.first { $0.progress == 33 }
            #expect(!(await f.manager.endPageSaveEarly()))
            let final = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(final.status == .done)
            #expect(try f.store.count(in: "accounts") == 30)
        }
    }

    @Test(
        "stops that end saves early, landing anywhere in large pages: what is kept is always where the sync resumes"
    )
    func stopsAnywhere() async throws {
        try await withSyncFixture { f in
            let total = 3_000
            let page = 1_000
            _ = try await f.client.adminSeed(type: "Account", count: total)
            // The newest stamp when each run's query starts (nothing changes meanwhile): a
            // record stamped with it is never where a run resumes from, since a record modified
            // after the query started may carry the same stamp; the resume fetches it again.
            let highWater = try #require(
                try await f.client.queryFirstPage("SELECT MAX(LastModifiedDate) FROM Account").records.first?[
                    "expr0"]?.stringValue.flatMap(DateTimeLiteral.milliseconds))
            let sync = try await f.manager.createSyncDown(
                target: try f.soqlTarget("SELECT Id, Name, LastModifiedDate FROM Account", batchSize: page),
                soupName: "accounts", name: "big")
            var runs = 0
            var delay = 1
            while try await f.manager.getSyncStatus(id: sync.id)?.status != .done {
                let before = try f.store.count(in: "accounts")
                let servedBefore = try await f.served()
                try await f.manager.reSync(id: sync.id)
                try await Task.sleep(for: .milliseconds(delay))  // wait-ok: the stop lands at varied points
                await f.manager.stop()
                await f.manager.endPageSaveEarly()
                await f.manager.waitUntilStopped()
                try await f.manager.restart(restartStoppedSyncs: false)
                runs += 1
                delay += 5
                let state = try #require(try await f.manager.getSyncStatus(id: sync.id))
                let local = try f.local()
                // Every record kept is at or before the stamp the sync resumes from (>=), so
                // nothing kept is skipped and nothing after it is fetched twice but ties, and
                // the record at the high-water mark (kept when the stop lands after the last
                // page's save).
                if state.status == .stopped {
                    let stamps = local.values.map {
                        DateTimeLiteral.milliseconds($0["LastModifiedDate"]?.stringValue ?? "") ?? .max
                    }
                    #expect(stamps.allSatisfy { $0 <= state.maxTimeStamp || $0 == highWater })
                }
                // What a run fetched and did not keep: at most the page ended early, the page
                // in flight, and the record the resume asks for again.
                let dropped = try await f.served() - servedBefore - (local.count - before)
                #expect(dropped <= 2 * page + 1)
                try #require(runs < 200)
            }
            #expect(try f.store.count(in: "accounts") == total)
        }
    }
}
