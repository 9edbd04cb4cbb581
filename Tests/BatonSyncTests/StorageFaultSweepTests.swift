import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTestSupport
import Logging
import SOQL
import Testing

/// SQLite-style anomaly testing for Baton's own writes: every write transaction of a sync down,
/// a sync up and a clean resync ghosts is failed in turn, once with each error a storage can
/// give, then the engine carries on (as a participant's retry does) and the outcome is checked
/// against the server.
@Suite("Storage-fault sweep", .timeLimit(.minutes(5)))
struct StorageFaultSweepTests {
    @Test("sync down: every write, every error kind; nothing lost, state never past the commit")
    func syncDownSweep() async throws {
        try await FaultSweep.with { sweep in
            let (violations, writes) = try await sweep.sweep(Self.syncDown)
            #expect(violations == [])
            // Create, submit, four pages, the end.
            #expect(writes >= 7)
        }
    }

    @Test("the sweep catches the original bug: state advanced before its page commits")
    func sweepCatchesAdvanceBeforeCommit() async throws {
        try await FaultSweep.with { sweep in
            // The mutant, built through the engine's test hook: the run takes each page's state on
            // before the page's save commits, so a failed save leaves it past what committed.
            let mutant = SyncHooks(pageWillSave: { committed, next in committed = next })
            let (violations, _) = try await sweep.sweep(Self.syncDown, hooks: mutant)
            #expect(violations.contains { $0.contains("maxTimeStamp") })
            #expect(violations.contains { $0.contains("resume point") })
            #expect(violations.contains { $0.contains("missing on the store") })
        }
    }

    @Test("sync up: every write, every error kind; no duplicate, nothing left dirty, store = server")
    func syncUpSweep() async throws {
        try await FaultSweep.with { sweep in
            let (violations, writes) = try await sweep.sweep(Self.syncUp)
            #expect(violations == [])
            // Create, submit, the count, three batches of (classify, apply, progress), the end.
            #expect(writes >= 12)
        }
    }

    @Test("clean resync ghosts: a failed delete removes nothing; the next one removes every ghost")
    func ghostSweep() async throws {
        try await FaultSweep.with { sweep in
            let (violations, writes) = try await sweep.sweep(Self.ghosts)
            #expect(violations == [])
            #expect(writes == 1)
        }
    }

    // MARK: - Scenarios

    static let query = "SELECT Id, Name FROM Account"

    /// 40 accounts in pages of 10. `faulted` is called once the setup is done: the sweep's fault
    /// counts writes from there.
    static func syncDown(_ c: FaultCase, _ faulted: @Sendable () -> Void) async throws -> [String] {
        try await c.client.adminSeed(type: "Account", count: 40)
        let target = try SoqlSyncDownTarget(client: c.client, query: query, batchSize: 10)
        faulted()
        var violations: [String] = []
        if let first = try? await c.manager.syncDown(target: target, soupName: "accounts", name: "accounts") {
            _ = await c.manager.waitForSync(id: first.id)
        }
        violations += try await c.checkSyncDownState("after the fault")
        // Carry on as a participant's retry does: resume the sync, or create it again.
        if let state = try await c.manager.getSyncStatus(name: "accounts") {
            let unpersisted = await c.manager.unpersistedSyncIds
            if state.status != .done || unpersisted.contains(state.id) {
                _ = try await c.manager.reSync(id: state.id)
                _ = await c.manager.waitForSync(id: state.id)
            }
        } else {
            let again = try await c.manager.syncDown(target: target, soupName: "accounts", name: "accounts")
            _ = await c.manager.waitForSync(id: again.id)
        }
        let final = try await c.manager.getSyncStatus(name: "accounts")
        if final?.status != .done {
            violations.append("the sync ended \(final?.status.rawValue ?? "missing")")
        }
        violations += try await c.checkSyncDownState("at the end")
        violations += try await c.compareWithServer()
        return violations
    }

    /// Two updates, one delete and three creates in batches of two.
    static func syncUp(_ c: FaultCase, _ faulted: @Sendable () -> Void) async throws -> [String] {
        let ids = try await c.client.adminSeed(type: "Account", count: 6)
        let down = try await c.manager.syncDown(
            target: try SoqlSyncDownTarget(client: c.client, query: query), soupName: "accounts")
        _ = await c.manager.waitForSync(id: down.id)
        try await c.unfenced.write { transaction in
            for (index, id) in ids.prefix(3).enumerated() {
                guard var entry = try transaction.entry(where: "Id", equals: .string(id), in: "accounts")
                else {
                    continue
                }
                if index < 2 {
                    entry.record["Name"] = .string("updated-\(index)")
                    try transaction.upsert(
                        LocalFlags.markUpdated(entry.record), into: "accounts", entryId: entry.entryId)
                } else {
                    try transaction.upsert(
                        LocalFlags.markDeleted(entry.record), into: "accounts", entryId: entry.entryId)
                }
            }
            for index in 0..<3 {
                try transaction.upsert(
                    LocalFlags.markCreated(["Name": .string("created-\(index)")]), into: "accounts")
            }
        }
        let target = try RESTSyncUpTarget(client: c.client, objectType: "Account", batchSize: 2)
        faulted()
        var violations: [String] = []
        if let first = try? await c.manager.syncUp(target: target, soupName: "accounts", name: "up") {
            _ = await c.manager.waitForSync(id: first.id)
        }
        if let state = try await c.manager.getSyncStatus(name: "up") {
            let unpersisted = await c.manager.unpersistedSyncIds
            if state.status != .done || unpersisted.contains(state.id) {
                _ = try await c.manager.reSync(id: state.id)
                _ = await c.manager.waitForSync(id: state.id)
            }
        } else {
            let again = try await c.manager.syncUp(target: target, soupName: "accounts", name: "up")
            _ = await c.manager.waitForSync(id: again.id)
        }
        let final = try await c.manager.getSyncStatus(name: "up")
        if final?.status != .done {
            violations.append("the sync up ended \(final?.status.rawValue ?? "missing")")
        }
        let dirty = try await c.store.read { try $0.dirtyEntryIds(in: "accounts") }
        if !dirty.isEmpty { violations.append("\(dirty.count) records still dirty") }
        let names = try await c.client.adminRecords(type: "Account").compactMap { $0["Name"]?.stringValue }
        for index in 0..<3 where names.filter({ $0 == "created-\(index)" }).count != 1 {
            violations.append(
                "created-\(index) is on the server \(names.filter { $0 == "created-\(index)" }.count) times")
        }
        for index in 0..<2 where !names.contains("updated-\(index)") {
            violations.append("updated-\(index) did not reach the server")
        }
        if names.count != 8 { violations.append("the server holds \(names.count) accounts, not 8") }
        violations += try await c.compareWithServer()
        return violations
    }

    /// 20 accounts synced down, 5 deleted on the server, then clean resync ghosts.
    static func ghosts(_ c: FaultCase, _ faulted: @Sendable () -> Void) async throws -> [String] {
        try await c.client.adminSeed(type: "Account", count: 20)
        let down = try await c.manager.syncDown(
            target: try SoqlSyncDownTarget(client: c.client, query: query), soupName: "accounts",
            name: "accounts")
        _ = await c.manager.waitForSync(id: down.id)
        try await c.client.adminDelete(type: "Account", count: 5)
        faulted()
        var violations: [String] = []
        do {
            _ = try await c.manager.cleanResyncGhosts(id: down.id)
        } catch {
            let left = try c.store.count(in: "accounts")
            if left != 20 { violations.append("a failed ghost cleaning left \(left) of 20 records") }
            _ = try await c.manager.cleanResyncGhosts(id: down.id)
        }
        violations += try await c.compareWithServer()
        return violations
    }
}

/// One server for a whole sweep; each case gets a fresh store, a fresh manager and an emptied
/// server.
struct FaultSweep: Sendable {
    let server: RunningServer
    let client: RESTClient

    static func with(_ body: (FaultSweep) async throws -> Void) async throws {
        var quiet = Logger(label: "test.sweep")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "sweep"), logger: quiet)
        let client = RESTClient(baseURL: server.url, token: server.token)
        do {
            try await body(FaultSweep(server: server, client: client))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    typealias Scenario = @Sendable (FaultCase, _ faulted: @Sendable () -> Void) async throws -> [String]

    /// Runs `scenario` once without a fault to count its writes, then once per write and error
    /// kind with that write failing. Returns every violation, each naming its case, and the
    /// number of writes swept.
    func sweep(_ scenario: Scenario, hooks: SyncHooks? = nil) async throws -> (
        violations: [String], writes: Int
    ) {
        let baseline = try await runCase(nil, scenario, hooks: hooks)
        var violations = baseline.violations.map { "no fault: \($0)" }
        for write in 1...max(1, baseline.writes) {
            for kind in StorageFaults.Kind.allCases {
                let outcome = try await runCase((write, kind), scenario, hooks: hooks)
                violations += outcome.violations.map { "write \(write) failing with \(kind.rawValue): \($0)" }
            }
        }
        return (violations, baseline.writes)
    }

    func runCase(_ fault: (Int, StorageFaults.Kind)?, _ scenario: Scenario, hooks: SyncHooks?) async throws
        -> (violations: [String], writes: Int)
    {
        _ = try await client.adminReset(type: "Account")
        let temp = try TemporaryDirectory()
        var quiet = Logger(label: "test.sweep")
        quiet.logLevel = .critical
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: temp.path + "/d"), faults: StorageFaults(), logger: quiet)
        let store = unfenced.store
        let manager = SyncManager(
            store: store, access: unfenced.access, targetFactory: RESTTargetFactory(client: client),
            hooks: hooks,
            logger: quiet)
        let faultCase = FaultCase(unfenced: unfenced, manager: manager, client: client)
        let start = Counter()
        let violations = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            return try await scenario(faultCase) {
                start.value = store.injected.writeCount
                if let (write, kind) = fault { store.injected.failWrite(write, with: kind) }
            }
        }
        try store.close()
        _ = temp
        return (violations, store.injected.writeCount - start.value)
    }
}

/// Where the sweep's write count starts (set once the scenario's setup is done).
final class Counter: Sendable {
    private let storage = Locked(0)
    var value: Int {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// A fresh store and manager, and the client of the sweep's server.
struct FaultCase: Sendable {
    let unfenced: UnfencedStore
    var store: SharedStore { unfenced.store }
    let manager: SyncManager
    let client: RESTClient

    /// The rule: the persisted state never moves past what committed.
    func checkSyncDownState(_ when: String) async throws -> [String] {
        guard let state = try await manager.getSyncStatus(name: "accounts") else { return [] }
        var violations: [String] = []
        let records = try store.query(.all, in: "accounts").map(\.record)
        let newest =
            records.compactMap { $0["LastModifiedDate"]?.stringValue.flatMap(DateTimeLiteral.milliseconds) }
            .max() ?? -1
        if state.maxTimeStamp > newest {
            violations.append(
                "\(when): maxTimeStamp \(state.maxTimeStamp) is past the newest committed record (\(newest))")
        }
        // The resume point: a run resumes after this id, so it must be one that committed.
        let savedIds = Set(records.compactMap { $0["Id"]?.stringValue })
        if let afterId = state.position.run?.afterId, !savedIds.contains(afterId) {
            violations.append("\(when): the resume point \(afterId) is past what committed")
        }
        if state.status != .done, state.totalSize > 0, state.progress > records.count * 100 / state.totalSize
        {
            violations.append(
                "\(when): progress \(state.progress)% with \(records.count) of \(state.totalSize) records committed"
            )
        }
        let unpersisted = await manager.unpersistedSyncIds
        let settled = await manager.waitForSync(id: state.id)
        if state.status == .running, !unpersisted.contains(state.id), settled?.status == .running {
            violations.append("\(when): the store says running while nothing runs the sync")
        }
        return violations
    }

    /// The store holds every server record once, clean, with the server's name.
    func compareWithServer() async throws -> [String] {
        var violations: [String] = []
        let server = try await client.adminRecords(type: "Account")
        let local = try store.query(.all, in: "accounts").map(\.record)
        let localIds = local.compactMap { $0["Id"]?.stringValue }
        if Set(localIds).count != localIds.count { violations.append("duplicate records on the store") }
        let byId = Dictionary(local.compactMap { r in r["Id"]?.stringValue.map { ($0, r) } }) { a, _ in a }
        let missing = server.filter { byId[$0["Id"]?.stringValue ?? ""] == nil }
        if !missing.isEmpty {
            violations.append("\(missing.count) of \(server.count) records missing on the store")
        }
        let serverIds = Set(server.compactMap { $0["Id"]?.stringValue })
        let extra = localIds.filter { !serverIds.contains($0) }
        if !extra.isEmpty {
            violations.append("\(extra.count) records on the store that the server does not have")
        }
        for record in server {
            guard let id = record["Id"]?.stringValue, let mine = byId[id] else { continue }
            if mine["Name"] != record["Name"] { violations.append("record \(id) differs from the server") }
            if LocalFlags.isDirty(mine) { violations.append("record \(id) is still dirty") }
        }
        if local.count != localIds.count {
            violations.append("\(local.count - localIds.count) local records without an Id")
        }
        return violations
    }
}
