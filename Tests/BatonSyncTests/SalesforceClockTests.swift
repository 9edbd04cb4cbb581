import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTime
import SOQL
import Testing

/// Every edit arrives on the reference server's clocks: Salesforce's (whole seconds, one stamp a
/// transaction, late commits) and the ideal one (a unique millisecond each, visible at once).
/// Beside each case, the query Mobile Sync 7.1 would send next (`LastModifiedDate >` the newest
/// stamp it saved) shows what the old rule misses on the same server.
@Suite("Sync down on Salesforce's clock", .timeLimit(.minutes(5)))
struct SalesforceClockTests {
    /// A server clock a test holds still, so that edits land in the same second.
    final class HeldClock: Sendable {
        let time: Locked<Int64>

        init() {
            let now = WallClock.nowMillis()
            time = Locked(now - now % 1000 + 300)
        }

        var source: @Sendable () -> Int64 { { [time] in time.withLock { $0 } } }

        func advance(_ ms: Int64) { time.withLock { $0 += ms } }
    }

    /// The ids Mobile Sync 7.1's next run would ask for: `LastModifiedDate > maxTimeStamp`.
    func mobileSync71Next(_ f: SyncFixture, after sync: SyncState) async throws -> Set<String> {
        let soql =
            "SELECT Id FROM Account WHERE LastModifiedDate > \(DateTimeLiteral.format(milliseconds: sync.maxTimeStamp)) ORDER BY LastModifiedDate"
        var ids = Set<String>()
        for try await page in f.client.query(soql) {
            ids.formUnion(page.records.compactMap { $0["Id"]?.stringValue })
        }
        return ids
    }

    func syncDown(_ f: SyncFixture, batchSize: Int = 10) async throws -> SyncState {
        let sync = try await f.manager.syncDown(
            target: try f.soqlTarget(batchSize: batchSize), soupName: "accounts", name: "accounts")
        let done = try #require(await f.manager.waitForSync(id: sync.id))
        #expect(done.status == .done)
        return done
    }

    func reSync(_ f: SyncFixture, _ sync: SyncState) async throws -> SyncState {
        _ = try await f.manager.reSync(id: sync.id)
        let done = try #require(await f.manager.waitForSync(id: sync.id))
        #expect(done.status == .done)
        return done
    }

    @Test("edits in the same second as the newest stamp saved arrive", arguments: ServerClock.allCases)
    func sameSecond(clock: ServerClock) async throws {
        let held = HeldClock()
        try await withSyncFixture(configure: {
            $0.clock = clock; $0.timeSource = held.source
        }) { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 20, ageSeconds: 3600)
            try await f.client.adminTouch(type: "Account", ids: Array(ids[0..<5]), fields: ["Name": "first"])
            let first = try await syncDown(f)
            // Three more edits, with the server's clock still in that second.
            let edited = Array(ids[10..<13])
            for id in edited {
                try await f.client.update(type: "Account", id: id, fields: ["Name": "same second"])
            }
            let old = try await mobileSync71Next(f, after: first)
            _ = try await reSync(f, first)
            let local = try f.local()
            #expect(edited.allSatisfy { local[$0]?["Name"] == "same second" })
            // Salesforce's clock gave them the newest stamp saved: `>` asks for none of them.
            #expect(old == (clock == .salesforce ? [] : Set(edited)))
        }
    }

    @Test(
        "a bulk edit with one stamp, paged across a stop, resumes after the last id saved",
        arguments: ServerClock.allCases)
    func bulkEditAcrossStop(clock: ServerClock) async throws {
        try await withSyncFixture(configure: { $0.clock = clock }) { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 60, ageSeconds: 3600)
            // One transaction: on Salesforce's clock, sixty records with one stamp.
            try await f.client.adminTouch(type: "Account", ids: ids, fields: ["Name": "bulk"])
            let stamps = Set(try await f.client.adminRecords(type: "Account").map { $0["LastModifiedDate"] })
            #expect(stamps.count == (clock == .salesforce ? 1 : 60))
            try await f.client.adminResetStats()
            let stopping = Locked(true)
            let (stopped, stopDone) = AsyncStream.makeStream(of: Void.self)
            try await ChangesWhilePagingTests().withManager(
                f,
                beforePage: { manager, page in
                    // Pages 1 and 2 saved (10 each), page 3 asked for: stop.
                    guard page == 3, stopping.withLock({ $0 }) else { return }
                    stopping.withLock { $0 = false }
                    await manager.stop()
                    stopDone.finish()
                    try Task.checkCancellation()
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 10), soupName: "accounts", name: "accounts")
                for await _ in stopped {}
                await manager.waitUntilStopped()
                let state = try #require(try await manager.getSyncStatus(id: sync.id))
                #expect(state.status == .stopped)
                #expect(try f.store.count(in: "accounts") == 20)
                #expect(state.position.run?.afterId == ids.sorted()[19])

                try await manager.restart(restartStoppedSyncs: true)
                let done = try #require(await manager.waitForSync(id: sync.id))
                #expect(done.status == .done)
                #expect(done.totalSize == 40)  // the rest, nothing saved again
                let local = try f.local()
                #expect(local.count == 60 && local.values.allSatisfy { $0["Name"] == "bulk" })
                // Served: the 20 saved, the page in flight when the stop came (at most), the 40.
                let served = try await f.served()
                #expect(served >= 60 && served <= 70)
            }
        }
    }

    @Test(
        "a transaction that commits after its records were served arrives with the next run",
        arguments: ServerClock.allCases)
    func lateCommitDuringRun(clock: ServerClock) async throws {
        try await withSyncFixture(configure: { $0.clock = clock }) { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 30, ageSeconds: 3600)
            // Stamped now; visible only once it commits, while the run is on its second page.
            let late = try await f.client.adminBeginTransaction(
                type: "Account", ids: [ids[2]], fields: ["Name": "committed late"])
            // Stamped later (on Salesforce's clock, at least as late) and visible at once.
            try await f.client.adminTouch(type: "Account", ids: [ids[25]], fields: ["Name": "later"])
            let committed = Locked(false)
            try await ChangesWhilePagingTests().withManager(
                f,
                beforePage: { _, page in
                    guard page == 2, !committed.withLock({ $0 }) else { return }
                    committed.withLock { $0 = true }
                    try await f.client.adminCommitTransaction(late.id)
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 10), soupName: "accounts", name: "accounts")
                let done = try #require(await manager.waitForSync(id: sync.id))
                #expect(done.status == .done && committed.withLock { $0 })
                #expect(try f.local()[ids[2]]?["Name"] != "committed late")  // served before the commit
                #expect(try f.local()[ids[25]]?["Name"] == "later")
                // Mobile Sync 7.1 would ask `>` the newest stamp saved, the later touch's: on
                // Salesforce's clock that leaves the late commit out.
                let old = try await mobileSync71Next(f, after: done)
                #expect(old.contains(ids[2]) == (clock == .ideal))
                _ = try await manager.reSync(id: sync.id)
                #expect(await manager.waitForSync(id: sync.id)?.status == .done)
                #expect(try f.local()[ids[2]]?["Name"] == "committed late")
            }
        }
    }

    @Test(
        "a transaction stamped before a run and committed after it is done arrives with the next run",
        arguments: ServerClock.allCases)
    func lateCommitAfterDone(clock: ServerClock) async throws {
        let held = HeldClock()
        try await withSyncFixture(configure: {
            $0.clock = clock; $0.timeSource = held.source
        }) { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 30, ageSeconds: 3600)
            let late = try await f.client.adminBeginTransaction(
                type: "Account", ids: [ids[5]], fields: ["Name": "committed late"])
            held.advance(2000)
            // A later stamp, visible at once: the newest the run saves.
            try await f.client.adminTouch(type: "Account", ids: [ids[20]], fields: ["Name": "later"])
            let first = try await syncDown(f)
            #expect(try f.local()[ids[20]]?["Name"] == "later")
            try await f.client.adminCommitTransaction(late.id)
            let old = try await mobileSync71Next(f, after: first)
            _ = try await reSync(f, first)
            #expect(try f.local()[ids[5]]?["Name"] == "committed late")
            // Its stamp is older than the newest saved: `>` never asks for it again. (The ideal
            // clock stamps it when it commits, so there nothing was late.)
            #expect(old == (clock == .salesforce ? [] : [ids[5]]))
        }
    }

    @Test("the next run starts the overlap before the server's time at the previous run's start")
    func nextRunBound() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 10, ageSeconds: 3600)
            let target = try SoqlSyncDownTarget(
                client: f.client, query: "SELECT Id, Name FROM Account", overlap: .seconds(5))
            let before = WallClock.nowMillis()
            let sync = try await f.manager.syncDown(target: target, soupName: "accounts", name: "accounts")
            let done = try #require(await f.manager.waitForSync(id: sync.id))
            let after = WallClock.nowMillis()
            let since = try #require(done.position.modifiedSince)
            // The server's Date, in whole seconds, read before `after` and not long before
            // `before` (its cache is renewed once a second, later under load: it may lag, never
            // lead).
            #expect(since % 1000 == 0)
            #expect(since + 5000 >= before - 10_000 && since + 5000 <= after)
        }
    }

    @Test("a transaction that commits later than the overlap after its stamp can be missed, as documented")
    func commitPastOverlap() async throws {
        let held = HeldClock()
        try await withSyncFixture(configure: { $0.timeSource = held.source }) { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 10, ageSeconds: 3600)
            // Stamped a minute ago by the server's clock: a transaction that ran that long.
            held.advance(-60_000)
            let late = try await f.client.adminBeginTransaction(
                type: "Account", ids: [ids[3]], fields: ["Name": "a minute late"])
            held.advance(60_000)
            func sync(_ name: String, overlap: Duration) async throws -> SyncState {
                let target = try SoqlSyncDownTarget(
                    client: f.client, query: "SELECT Id, Name FROM Account", overlap: overlap)
                let sync = try await f.manager.syncDown(target: target, soupName: name, name: name)
                return try #require(await f.manager.waitForSync(id: sync.id))
            }
            let narrow = try await sync("narrow", overlap: .seconds(5))
            let wide = try await sync("wide", overlap: .seconds(120))
            try await f.client.adminCommitTransaction(late.id)
            for state in [narrow, wide] {
                _ = try await f.manager.reSync(id: state.id)
                #expect(await f.manager.waitForSync(id: state.id)?.status == .done)
            }
            // Five seconds of overlap do not reach a commit a minute late; two minutes do.
            #expect(try f.local("narrow")[ids[3]]?["Name"] != "a minute late")
            #expect(try f.local("wide")[ids[3]]?["Name"] == "a minute late")
        }
    }

    @Test(
        "a parent and its children that commit late arrive with the next run", arguments: ServerClock.allCases
    )
    func parentChildrenLateCommit(clock: ServerClock) async throws {
        try await withSyncFixture(configure: { $0.clock = clock }) { f in
            var accounts: [String] = []
            var contacts: [String: [String]] = [:]
            for index in 0..<4 {
                let account = try await f.client.create(
                    type: "Account", fields: ["Name": .string("A\(index)")])
                accounts.append(account)
                for child in 0..<3 {
                    contacts[account, default: []].append(
                        try await f.client.create(
                            type: "Contact",
                            fields: [
                                "LastName": .string("C\(index)-\(child)"), "AccountId": .string(account),
                            ]))
                }
            }
            try await f.age("Account")
            try await f.age("Contact")
            let parent = accounts[1]
            let children = try await f.client.adminBeginTransaction(
                type: "Contact", ids: contacts[parent], fields: ["LastName": "late child"])
            let parentEdit = try await f.client.adminBeginTransaction(
                type: "Account", ids: [parent], fields: ["Name": "late parent"])
            try await f.client.adminTouch(type: "Account", ids: [accounts[3]], fields: ["Name": "visible"])
            let target = try ParentChildrenSyncDownTarget(
                client: f.client,
                parentInfo: ParentInfo(sobjectType: "Account", soupName: "accounts"),
                parentFieldlist: ["Id", "Name", "LastModifiedDate"],
                childrenInfo: ChildrenInfo(
                    sobjectType: "Contact", sobjectTypePlural: "Contacts", soupName: "contacts",
                    parentIdFieldName: "AccountId"),
                childrenFieldlist: ["Id", "LastName", "LastModifiedDate"], relationshipType: .lookup,
                batchSize: 2)
            let sync = try await f.manager.syncDown(target: target, soupName: "accounts", name: "tree")
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(try f.local("accounts")[parent]?["Name"] == "A1")
            try await f.client.adminCommitTransaction(children.id)
            try await f.client.adminCommitTransaction(parentEdit.id)
            _ = try await f.manager.reSync(id: sync.id)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(try f.local("accounts")[parent]?["Name"] == "late parent")
            let local = try f.local("contacts")
            #expect(contacts[parent]!.allSatisfy { local[$0]?["LastName"] == "late child" })
            #expect(local.count == 12)
        }
    }
}
