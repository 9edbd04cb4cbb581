import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Logging
import SOQL
import Testing

/// A sync down target that runs `beforePage(n)` before it asks for page `n` (2, 3, …): a
/// server-side change, or a stop, that lands while the query is being paged.
final class ChangesWhilePaging: SyncDownTarget {
    let inner: any SyncDownTarget
    let pagesAsked = Locked(0)
    let beforePage: @Sendable (Int) async throws -> Void

    init(inner: any SyncDownTarget, beforePage: @escaping @Sendable (Int) async throws -> Void) {
        self.inner = inner
        self.beforePage = beforePage
    }

    var json: JSONObject { inner.json }
    var idFieldName: String { inner.idFieldName }
    var modificationDateFieldName: String { inner.modificationDateFieldName }
    var resumesAfterId: Bool { inner.resumesAfterId }
    var overlap: Duration { inner.overlap }

    func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        pagesAsked.withLock { $0 = 1 }
        return try await inner.startFetch(start)
    }

    func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        let number = pagesAsked.withLock { asked in
            asked += 1
            return asked
        }
        if page.next != nil { try await beforePage(number) }
        return try await inner.continueFetch(after: page)
    }

    func startRemoteIdFetch() async throws -> RemoteIdPage { try await inner.startRemoteIdFetch() }
    func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? {
        try await inner.continueRemoteIdFetch(after: page)
    }
    func modificationTimeStamp(of record: JSONObject) -> Int64? { inner.modificationTimeStamp(of: record) }
    func timeStamps(of record: JSONObject) -> [Int64] { inner.timeStamps(of: record) }
    var childrenSoup: ChildrenSoup? { inner.childrenSoup }
    var checksGhostsByExistence: Bool { inner.checksGhostsByExistence }
    func existingIds(among ids: [String]) async throws -> [String] { try await inner.existingIds(among: ids) }
}

struct ChangesWhilePagingFactory: SyncTargetFactory {
    let inner: RESTTargetFactory
    let beforePage: @Sendable (Int) async throws -> Void

    func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget {
        ChangesWhilePaging(inner: try inner.syncDownTarget(from: json), beforePage: beforePage)
    }

    func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget {
        try inner.syncUpTarget(from: json)
    }
}

/// The server fixes a query's ordered ids when it starts and reads each page's records when it
/// serves the page (as Salesforce's query locators do), so a record modified meanwhile can come
/// with a time stamp later than records the query has still to serve. The accounts were last
/// modified an hour before (outside the overlap), so a run after the first fetches only what
/// changed.
@Suite("Sync down: records modified while the query is paged", .timeLimit(.minutes(5)))
struct ChangesWhilePagingTests {
    /// Six accounts in pages of two. Before page 2 is asked for, the first account (already
    /// served with its old values) and then the third (still to be served, so it comes with its
    /// new values and the newest stamp) are renamed on the server.
    func renameFirstAndThird(_ client: RESTClient, _ ids: [String]) async throws {
        _ = try await client.adminTouch(type: "Account", ids: [ids[0]], fields: ["Name": "first, renamed"])
        _ = try await client.adminTouch(type: "Account", ids: [ids[2]], fields: ["Name": "third, renamed"])
    }

    func stamp(_ client: RESTClient, _ id: String) async throws -> Int64 {
        let record = try #require(try await client.get(type: "Account", id: id))
        return try #require(DateTimeLiteral.milliseconds(record["LastModifiedDate"]?.stringValue ?? ""))
    }

    func withManager(
        _ f: SyncFixture, beforePage: @escaping @Sendable (SyncManager, Int) async throws -> Void,
        _ body: (SyncManager) async throws -> Void
    ) async throws {
        var logger = Logger(label: "test.sync")
        logger.logLevel = .warning
        let holder = Locked<SyncManager?>(nil)
        let factory = ChangesWhilePagingFactory(inner: RESTTargetFactory(client: f.client, store: f.store)) {
            page in
            guard let manager = holder.withLock({ $0 }) else { return }
            try await beforePage(manager, page)
        }
        let manager = SyncManager(unfenced: f.unfenced, targetFactory: factory, logger: logger)
        holder.withLock { $0 = manager }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            try await body(manager)
        }
    }

    @Test(
        "a complete run starts the next one before its own start, so that one fetches what changed during it")
    func completeRun() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 6, ageSeconds: 3600)
            let touched = Locked(false)
            try await withManager(
                f,
                beforePage: { _, page in
                    guard page == 2, !touched.withLock({ $0 }) else { return }
                    touched.withLock { $0 = true }
                    try await renameFirstAndThird(f.client, ids)
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "accounts")
                let done = try #require(await manager.waitForSync(id: sync.id))
                #expect(done.status == .done)
                #expect(touched.withLock { $0 })
                // The third came with its new values, the first with its old ones.
                #expect(try f.local()[ids[2]]?["Name"] == "third, renamed")
                #expect(try f.local()[ids[0]]?["Name"] != "first, renamed")
                // The next run starts before the renames.
                let since = try #require(done.position.modifiedSince)
                #expect(since <= (try await stamp(f.client, ids[0])))
                #expect(done.position.run == nil)

                let again = try await manager.reSync(id: sync.id)
                let second = try #require(await manager.waitForSync(id: again.id))
                #expect(second.status == .done)
                #expect(second.totalSize == 2)  // the two renamed accounts
                #expect(try f.local()[ids[0]]?["Name"] == "first, renamed")
                #expect(try f.local().count == 6)
            }
        }
    }

    @Test("a run stopped after such a page resumes after the last id it saved, and misses nothing")
    func stoppedRun() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 6, ageSeconds: 3600)
            let touched = Locked(false)
            let stopping = Locked(true)
            let (stopped, stopDone) = AsyncStream.makeStream(of: Void.self)
            try await withManager(
                f,
                beforePage: { manager, page in
                    if page == 2, !touched.withLock({ $0 }) {
                        touched.withLock { $0 = true }
                        try await renameFirstAndThird(f.client, ids)
                    }
                    // Stop while page 3 is asked for: pages 1 and 2 are saved, page 3 never comes.
                    if page == 3, stopping.withLock({ $0 }) {
                        stopping.withLock { $0 = false }
                        await manager.stop()
                        stopDone.finish()
                        try Task.checkCancellation()
                    }
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "accounts")
                for await _ in stopped {}
                await manager.waitUntilStopped()
                let state = try #require(try await manager.getSyncStatus(id: sync.id))
                #expect(state.status == .stopped)
                #expect(Set(try f.local().keys) == Set(ids.prefix(4)))
                // After page 2's last id, whatever its stamps.
                #expect(state.position.run?.afterId == ids.sorted()[3])

                try await f.client.adminResetStats()
                _ = try await manager.restart(restartStoppedSyncs: true)
                let final = try #require(await manager.waitForSync(id: sync.id))
                #expect(final.status == .done)
                #expect(try await f.served() == 2)  // the fifth and sixth: nothing saved came again
                var local = try f.local()
                #expect(local.count == 6)
                #expect(local[ids[2]]?["Name"] == "third, renamed")
                // The first was served before its rename: the next run brings it (and the third
                // again).
                _ = try await manager.reSync(id: sync.id)
                let next = try #require(await manager.waitForSync(id: sync.id))
                #expect(next.status == .done && next.totalSize == 2)
                local = try f.local()
                #expect(local[ids[0]]?["Name"] == "first, renamed")
            }
        }
    }

    @Test("a page whose last record was modified while the query was paged resumes after that record")
    func stoppedAfterModifiedLastRecord() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 6, ageSeconds: 3600)
            let touched = Locked(false)
            let stopping = Locked(true)
            let (stopped, stopDone) = AsyncStream.makeStream(of: Void.self)
            try await withManager(
                f,
                beforePage: { manager, page in
                    // Before page 2: the first account (served) and then the fourth (page 2's
                    // last) are renamed, so page 2 ends with the newest stamp on the server.
                    if page == 2, !touched.withLock({ $0 }) {
                        touched.withLock { $0 = true }
                        _ = try await f.client.adminTouch(
                            type: "Account", ids: [ids[0]], fields: ["Name": "first, renamed"])
                        _ = try await f.client.adminTouch(
                            type: "Account", ids: [ids[3]], fields: ["Name": "fourth, renamed"])
                    }
                    if page == 3, stopping.withLock({ $0 }) {
                        stopping.withLock { $0 = false }
                        await manager.stop()
                        stopDone.finish()
                        try Task.checkCancellation()
                    }
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "accounts")
                for await _ in stopped {}
                await manager.waitUntilStopped()
                let state = try #require(try await manager.getSyncStatus(id: sync.id))
                #expect(state.status == .stopped)
                #expect(try f.local()[ids[3]]?["Name"] == "fourth, renamed")
                // An id does not change with an edit: the resume point is the fourth's.
                #expect(state.position.run?.afterId == ids.sorted()[3])

                _ = try await manager.restart(restartStoppedSyncs: true)
                let final = try #require(await manager.waitForSync(id: sync.id))
                #expect(final.status == .done)
                var local = try f.local()
                #expect(Set(local.keys) == Set(ids))
                #expect(local[ids[3]]?["Name"] == "fourth, renamed")
                // The first was renamed after it was served: the next run brings it.
                _ = try await manager.reSync(id: sync.id)
                #expect(await manager.waitForSync(id: sync.id)?.status == .done)
                local = try f.local()
                #expect(local[ids[0]]?["Name"] == "first, renamed")
            }
        }
    }

    @Test("a complete run whose last record was modified while the query was paged misses no earlier edit")
    func completeRunWithModifiedLastRecord() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 6, ageSeconds: 3600)
            let touched = Locked(false)
            try await withManager(
                f,
                beforePage: { _, page in
                    // Before the last page: the first account (served) and then the sixth (the
                    // last page's last) are renamed.
                    guard page == 3, !touched.withLock({ $0 }) else { return }
                    touched.withLock { $0 = true }
                    _ = try await f.client.adminTouch(
                        type: "Account", ids: [ids[0]], fields: ["Name": "first, renamed"])
                    _ = try await f.client.adminTouch(
                        type: "Account", ids: [ids[5]], fields: ["Name": "sixth, renamed"])
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "accounts")
                let done = try #require(await manager.waitForSync(id: sync.id))
                #expect(done.status == .done)
                #expect(try f.local()[ids[5]]?["Name"] == "sixth, renamed")
                #expect(try f.local()[ids[0]]?["Name"] != "first, renamed")
                // The next run starts before the renames.
                #expect(try #require(done.position.modifiedSince) <= (try await stamp(f.client, ids[0])))

                let again = try await manager.reSync(id: sync.id)
                let second = try #require(await manager.waitForSync(id: again.id))
                #expect(second.status == .done)
                #expect(second.totalSize == 2)  // the two renamed accounts
                #expect(try f.local()[ids[0]]?["Name"] == "first, renamed")
            }
        }
    }
}
