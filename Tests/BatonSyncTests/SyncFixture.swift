import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTestSupport
import Logging
import Testing

/// A live reference server (port 0), a store in a temp directory, and a running SyncManager.
struct SyncFixture: Sendable {
    let server: RunningServer
    let client: RESTClient
    /// The store, opened to write outside the lease: the engine tests run one process.
    let unfenced: UnfencedStore
    let manager: SyncManager
    var store: SharedStore { unfenced.store }

    func soqlTarget(_ query: String = "SELECT Id, Name, Number__c FROM Account", batchSize: Int? = nil) throws
        -> SoqlSyncDownTarget
    {
        try SoqlSyncDownTarget(client: client, query: query, batchSize: batchSize)
    }

    func upTarget(batchSize: Int = 200) throws -> RESTSyncUpTarget {
        try RESTSyncUpTarget(client: client, objectType: "Account", batchSize: batchSize)
    }

    /// Records of the soup, by server id.
    func local(_ soup: String = "accounts") throws -> [String: JSONObject] {
        var byId: [String: JSONObject] = [:]
        for entry in try store.query(.all, in: soup) {
            if let id = entry.record["Id"]?.stringValue { byId[id] = entry.record }
        }
        return byId
    }

    /// Mobile Sync's `trySyncDown`: runs `target` into `accounts` and checks the listener heard
    /// `running 0/-1`, then `numberFetches` updates at `i*100/numberFetches`, then `done 100`.
    @discardableResult
    func trySyncDown(_ mode: MergeMode, _ target: any SyncDownTarget, totalSize: Int, numberFetches: Int = 1)
        async throws -> SyncState
    {
        let log = UpdateLog()
        let sync = try await manager.syncDown(
            target: target, options: SyncOptions(mergeMode: mode), soupName: "accounts", onUpdate: log.block)
        let done = try #require(await manager.waitForSync(id: sync.id))
        let expected =
            ["running 0/-1"] + (0..<numberFetches).map { "running \($0 * 100 / numberFetches)/\(totalSize)" }
            + ["done 100/\(totalSize)"]
        #expect(ListenerContractTests.render(log.all) == expected)
        #expect(done.target == target.json)
        return done
    }

    /// When each record of the soup was last written locally (its entry's time stamp), by server id.
    func written(_ soup: String = "accounts") throws -> [String: Int64] {
        var byId: [String: Int64] = [:]
        for entry in try store.query(.all, in: soup) {
            if let id = entry.record["Id"]?.stringValue { byId[id] = entry.lastModified }
        }
        return byId
    }

    /// Stamps every record of `type` on the server an hour back, as records an org has had for
    /// a while (beyond a sync's overlap, so a run after the first fetches only what changes).
    func age(_ type: String) async throws {
        try await client.adminTouch(type: type, count: 1_000_000, ageSeconds: 3600)
    }

    func served() async throws -> Int {
        Int(try await client.adminStats().value(atPath: "recordsServed.Account")?.intValue ?? 0)
    }
}

/// Runs `body` with a fixture; the manager runs in a child task cancelled at the end.
/// `configure` changes the server's configuration first (its clock, its child page size…).
func withSyncFixture(
    configure: (inout ReferenceServer.Configuration) -> Void = { _ in },
    _ body: @Sendable (SyncFixture) async throws -> Void
) async throws {
    let temp = try TemporaryDirectory()
    let unfenced = try UnfencedStore.open(
        directory: try SharedDirectory(path: temp.path + "/shared"), logger: Logger(label: "test"))
    var quiet = Logger(label: "test.server")
    quiet.logLevel = .critical  // the server logs its own shutdown as an error
    var configuration = ReferenceServer.Configuration(token: "sync-test")
    configure(&configuration)
    let server = try await ReferenceServer.start(configuration, logger: quiet)
    let client = RESTClient(
        baseURL: server.url, token: server.token,
        retry: .init(maxAttempts: 3, initialBackoff: .milliseconds(20)))
    var managerLogger = Logger(label: "test.sync")
    managerLogger.logLevel = .warning
    let manager = SyncManager(
        unfenced: unfenced, targetFactory: RESTTargetFactory(client: client, store: unfenced.store),
        logger: managerLogger)
    let fixture = SyncFixture(server: server, client: client, unfenced: unfenced, manager: manager)
    do {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            try await body(fixture)
        }
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
    _ = temp
}

/// Collects one sync's updates and lets a test wait for a condition on them.
final class UpdateLog: Sendable {
    private let states = Locked<[SyncState]>([])
    private let stream: AsyncStream<SyncState>
    private let continuation: AsyncStream<SyncState>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: SyncState.self)
    }

    /// The listener to pass as `onUpdate`.
    var block: SyncUpdateBlock {
        { [self] state in
            states.withLock { $0.append(state) }
            continuation.yield(state)
            return .proceed
        }
    }

    var all: [SyncState] { states.withLock { $0 } }

    /// Waits for the first update (from now on or already seen) that satisfies `condition`.
    func first(where condition: (SyncState) -> Bool) async -> SyncState? {
        if let seen = all.first(where: condition) { return seen }
        for await state in stream where condition(state) { return state }
        return nil
    }
}
