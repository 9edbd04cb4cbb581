import BatonLocking
import BatonStore
import BatonSync
import BatonTestSupport
import GRDB
import Logging
import Testing

/// Holds a fetch until the test opens it, and tells the test when a fetch arrived: the syncs
/// submitted while it is held stay queued, for as long as the test needs.
final class FetchGate: Sendable {
    let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
    let (openings, opener) = AsyncStream.makeStream(of: Void.self)

    /// Called by the held fetch: says it arrived, then waits for ``open()``.
    func pass() async {
        arrived.yield()
        for await _ in openings { return }
    }

    /// Waits until a held fetch arrived.
    func arrival() async {
        for await _ in arrivals { return }
    }

    func open() { opener.yield() }
}

/// A sync down of `count` records held in memory (no server); with a gate, its fetch waits for
/// the gate to open.
struct MemoryTarget: SyncDownTarget {
    var count: Int
    var gate: FetchGate?

    var json: JSONObject { ["type": "memory", "count": .int(Int64(count)), "gated": .bool(gate != nil)] }
    var idFieldName: String { "Id" }
    var modificationDateFieldName: String { "LastModifiedDate" }

    var ids: [String] { (0..<count).map { "R\($0)" } }

    func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        await gate?.pass()
        let records: [JSONObject] = ids.map {
            ["Id": .string($0), "LastModifiedDate": .string("2024-01-01T00:00:00.000Z")]
        }
        return SyncDownPage(records: records, totalSize: count, next: nil)
    }

    func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? { nil }
    func startRemoteIdFetch() async throws -> RemoteIdPage { RemoteIdPage(ids: ids, next: nil) }
    func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }
    func modificationTimeStamp(of record: JSONObject) -> Int64? { 1_704_067_200_000 }
}

/// Rebuilds ``MemoryTarget``s; any other target type is unknown to it.
struct MemoryTargetFactory: SyncTargetFactory {
    let gate: FetchGate

    func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget {
        guard json["type"] == "memory", let count = json["count"]?.intValue else {
            throw SyncError(
                .invalidTarget, "unknown sync down target type '\(json["type"]?.stringValue ?? "none")'")
        }
        return MemoryTarget(count: Int(count), gate: json["gated"] == .bool(true) ? gate : nil)
    }

    func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget {
        throw SyncError(.invalidTarget, "no sync up target here")
    }
}

/// A manager over a store in a temp directory, writing unfenced, with in-memory targets.
struct UnreadableFixture: Sendable {
    let unfenced: UnfencedStore
    let manager: SyncManager
    let gate: FetchGate
    var store: SharedStore { unfenced.store }

    /// Runs SQL on the store file from a connection of its own, as a user who got past the write
    /// guard would (`sqlite3` alone is refused: `ForeignWriteTests`).
    func sql(_ sql: String, _ arguments: StatementArguments = []) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { try WriteGuards.register(on: $0) }
        let queue = try DatabaseQueue(path: store.directory.storePath, configuration: configuration)
        try queue.write { try $0.execute(sql: sql, arguments: arguments) }
    }

    /// A column of a sync's row, as stored.
    func column(_ name: String, of id: Int64) throws -> DatabaseValue {
        let queue = try DatabaseQueue(path: store.directory.storePath)
        return try queue.read {
            try DatabaseValue.fetchOne(
                $0, sql: "SELECT \(name) FROM sync_state WHERE id = ?", arguments: [id])
        } ?? .null
    }

    static func run(
        faults: StorageFaults? = nil, hooks: SyncHooks? = nil,
        _ body: @Sendable (UnreadableFixture) async throws -> Void
    ) async throws {
        let temp = try TemporaryDirectory()
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: temp.path + "/shared"), faults: faults,
            logger: Logger(label: "test"))
        var logger = Logger(label: "test.sync")
        logger.logLevel = .critical  // the set-asides are logged as warnings, on purpose
        let gate = FetchGate()
        let manager = SyncManager(
            store: unfenced.store, access: unfenced.access, targetFactory: MemoryTargetFactory(gate: gate),
            hooks: hooks, logger: logger)
        let fixture = UnreadableFixture(unfenced: unfenced, manager: manager, gate: gate)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            try await body(fixture)
        }
        _ = temp
    }

    init(unfenced: UnfencedStore, manager: SyncManager, gate: FetchGate) {
        self.unfenced = unfenced
        self.manager = manager
        self.gate = gate
    }
}

@Suite("Syncs that cannot be read are set aside; the others run", .timeLimit(.minutes(2)))
struct UnreadableSyncTests {
    /// A column of a queued sync's row set by hand, and what the error must say of it.
    struct Damage: Sendable, CustomTestStringConvertible {
        var column: String
        var value: String
        var says: String
        var testDescription: String { "\(column) = \(value)" }
    }

    static let damages = [
        Damage(column: "options", value: "{not json", says: "options that are not a JSON object"),
        Damage(column: "target", value: "[1, 2]", says: "a target that is not a JSON object"),
        Damage(column: "type", value: "syncSideways", says: "an unknown type 'syncSideways'"),
        Damage(column: "progress", value: "lots", says: "a progress that is not an integer"),
    ]

    @Test(
        "a queued sync whose row goes bad ends failed with an error naming it; the others complete; repaired, reSync runs it",
        arguments: damages)
    func queuedRowGoesBad(damage: Damage) async throws {
        try await UnreadableFixture.run { f in
            // Mobile Sync's one at a time: the later syncs wait in the queue.
            await f.manager.setConcurrency(1)
            let setAsides = await f.manager.setAsideSyncs()
            let first = try await f.manager.syncDown(
                target: MemoryTarget(count: 3, gate: f.gate), soupName: "first", name: "first")
            // The first sync's fetch is held: the ones submitted now stay queued behind it.
            await f.gate.arrival()
            let second = try await f.manager.syncDown(
                target: MemoryTarget(count: 2), soupName: "second", name: "second")
            let third = try await f.manager.syncDown(
                target: MemoryTarget(count: 4), soupName: "third", name: "third")
            let original = try f.column(damage.column, of: second.id)
            try f.sql("UPDATE sync_state SET \(damage.column) = ? WHERE id = ?", [damage.value, second.id])
            f.gate.open()

            #expect(await f.manager.waitForSync(id: first.id)?.status == .done)
            // Set aside: no state can be read to give its waiters.
            #expect(await f.manager.waitForSync(id: second.id) == nil)
            #expect(await f.manager.waitForSync(id: third.id)?.status == .done)
            #expect(try f.store.count(in: "third") == 4)

            let stored = try #require(try StoredSync.byId(second.id, store: f.store))
            guard case .unreadable(let bad) = stored else {
                Issue.record("sync \(second.id) reads as \(stored)")
                return
            }
            #expect(bad.status == "failed")
            let error = try #require(bad.error)
            #expect(error.contains("sync 'second' (#\(second.id))"), "\(error)")
            #expect(error.contains(damage.says), "\(error)")
            #expect(!error.contains(damage.value) || damage.column == "type", "\(error)")
            var reported = setAsides.makeAsyncIterator()
            let told = await reported.next()
            #expect(told?.id == second.id && told?.name == "second" && told?.error.message == error)
            // What the store shows has not moved: a reSync of it is refused, and sets it aside again.
            await #expect { try await f.manager.reSync(id: second.id) } throws: {
                ($0 as? SyncError)?.code == .unreadableSync
            }

            try f.sql("UPDATE sync_state SET \(damage.column) = ? WHERE id = ?", [original, second.id])
            try await f.manager.reSync(id: second.id)
            let repaired = try #require(await f.manager.waitForSync(id: second.id))
            #expect(repaired.status == .done && repaired.error == nil)
            #expect(try f.store.count(in: "second") == 2)
        }
    }

    @Test(
        "a queued sync whose read fails ends failed with the cause, never left running; the others complete; reSync runs it"
    )
    func queuedReadFails() async throws {
        let failing = Locked<Set<Int64>>([])
        // The store cannot be read for this sync, once: an I/O error.
        let hooks = SyncHooks(syncWillBeRead: { id in
            if failing.withLock({ $0.remove(id) != nil }) {
                throw StoreError(.database, "disk I/O error (injected read fault)")
            }
        })
        try await UnreadableFixture.run(hooks: hooks) { f in
            // Mobile Sync's one at a time: the later syncs wait in the queue.
            await f.manager.setConcurrency(1)
            let setAsides = await f.manager.setAsideSyncs()
            let first = try await f.manager.syncDown(
                target: MemoryTarget(count: 3, gate: f.gate), soupName: "first", name: "first")
            await f.gate.arrival()
            let second = try await f.manager.syncDown(
                target: MemoryTarget(count: 2), soupName: "second", name: "second")
            let third = try await f.manager.syncDown(
                target: MemoryTarget(count: 4), soupName: "third", name: "third")
            failing.withLock { _ = $0.insert(second.id) }
            f.gate.open()

            #expect(await f.manager.waitForSync(id: first.id)?.status == .done)
            let failed = try #require(await f.manager.waitForSync(id: second.id))
            #expect(failed.status == .failed)
            let error = try #require(failed.error)
            #expect(
                error.contains("sync 'second' (#\(second.id)) could not be read from the store"), "\(error)")
            #expect(error.contains("disk I/O error (injected read fault)"), "\(error)")
            #expect(try SyncState.byId(second.id, store: f.store)?.status == .failed)
            #expect(await f.manager.waitForSync(id: third.id)?.status == .done)
            #expect(await f.manager.unpersistedSyncIds == [])
            var reported = setAsides.makeAsyncIterator()
            let told = await reported.next()
            #expect(told?.id == second.id && told?.error.message == error)

            try await f.manager.reSync(id: second.id)
            let rerun = try #require(await f.manager.waitForSync(id: second.id))
            #expect(rerun.status == .done && rerun.error == nil)
            #expect(try f.store.count(in: "second") == 2)
        }
    }

    @Test("a sync whose target this version does not know ends failed with an error naming it")
    func unknownTarget() async throws {
        try await UnreadableFixture.run { f in
            let sync = try await f.manager.createSyncDown(
                target: MemoryTarget(count: 2), soupName: "accounts", name: "accounts")
            try f.sql(
                "UPDATE sync_state SET target = ? WHERE id = ?", [#"{"type":"graphql"}"#, sync.id])
            try await f.manager.reSync(id: sync.id)
            let failed = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(failed.status == .failed)
            let error = try #require(failed.error)
            #expect(error.contains("sync 'accounts' (#\(sync.id))"), "\(error)")
            #expect(error.contains("unknown sync down target type 'graphql'"), "\(error)")
        }
    }

    @Test("recovery and restart set aside a sync they cannot read, and resume the others")
    func restartSetsAside() async throws {
        try await UnreadableFixture.run { f in
            let setAsides = await f.manager.setAsideSyncs()
            let good = try await f.manager.createSyncDown(
                target: MemoryTarget(count: 3), soupName: "good", name: "good")
            let bad = try await f.manager.createSyncDown(
                target: MemoryTarget(count: 1), soupName: "bad", name: "bad")
            // Left running by a dead writer; one of them since rewritten by another version.
            try f.sql("UPDATE sync_state SET status = 'running'")
            try f.sql("UPDATE sync_state SET type = 'syncSideways' WHERE id = ?", [bad.id])

            let recovered = try await f.manager.recoverInterruptedSyncs(under: f.unfenced.access)
            #expect(recovered == [good.id, bad.id])
            await f.manager.stop()
            let restarted = try await f.manager.restart(restartStoppedSyncs: true)
            #expect(restarted.map(\.id) == [good.id])
            #expect(await f.manager.waitForSync(id: good.id)?.status == .done)
            #expect(try f.store.count(in: "good") == 3)

            var reported = setAsides.makeAsyncIterator()
            #expect(await reported.next()?.id == bad.id)
            guard case .unreadable(let stored) = try StoredSync.byId(bad.id, store: f.store) else {
                Issue.record("sync \(bad.id) reads whole")
                return
            }
            #expect(stored.status == "failed")
            #expect(stored.error?.contains("sync 'bad' (#\(bad.id))") == true, "\(stored.error ?? "nil")")
            #expect(stored.error?.contains("unknown type 'syncSideways'") == true)
        }
    }

    @Test("a set-aside whose write fails is kept and written again; the row moves only once it commits")
    func setAsideWriteFails() async throws {
        let faults = StorageFaults()
        try await UnreadableFixture.run(faults: faults) { f in
            let sync = try await f.manager.createSyncDown(
                target: MemoryTarget(count: 1), soupName: "accounts", name: "accounts")
            try f.sql("UPDATE sync_state SET options = '{not json' WHERE id = ?", [sync.id])
            faults.failAllWrites(with: .full)
            await #expect { try await f.manager.reSync(id: sync.id) } throws: {
                ($0 as? SyncError)?.code == .unreadableSync
            }
            #expect(await f.manager.unpersistedSyncIds == [sync.id])
            guard case .unreadable(let before) = try StoredSync.byId(sync.id, store: f.store) else {
                Issue.record("sync \(sync.id) reads whole")
                return
            }
            #expect(before.status == "new" && before.error == nil)

            faults.failAllWrites(with: nil)
            #expect(await f.manager.flushUnpersisted() == [])
            guard case .unreadable(let after) = try StoredSync.byId(sync.id, store: f.store) else {
                Issue.record("sync \(sync.id) reads whole")
                return
            }
            #expect(after.status == "failed")
            #expect(after.error?.contains("sync 'accounts' (#\(sync.id))") == true)
        }
    }
}
