import BatonJSON
import BatonTime
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The reference REST server: the subset of the Salesforce REST API that Mobile Sync uses, on
/// loopback, with its own SQLite storage and fault injection.
///
/// ```swift
/// let server = try await ReferenceServer.start(ReferenceServer.Configuration(token: "secret"))
/// print(server.url)   // http://127.0.0.1:PORT
/// try await server.stop()
/// ```
public struct ReferenceServer: Sendable {
    /// How to run the server.
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        /// The bearer token every request must carry.
        public var token: String
        /// The SQLite file for records; `nil` keeps them in memory.
        public var dataPath: String?
        /// How long a query locator answers, its last page included (Salesforce: 15 minutes).
        public var locatorLifetime: Duration
        /// Children a parent's child subquery result holds before it pages (Salesforce: about
        /// 200): past it the nested result says `"done": false` and gives a `nextRecordsUrl`
        /// for the rest, served by the query-locator route this many at a time (or the request's
        /// `Sforce-Query-Options: batchSize`); below 1 counts as 1.
        public var childPageSize: Int
        /// The types and fields the server knows (``ServerSchema/standard`` unless extended).
        public var schema: ServerSchema
        /// How records are stamped: Salesforce's clock unless a test asks for the ideal one.
        public var clock: ServerClock
        /// Where record stamps read the time (ms since 1970): the wall clock, or a clock a test
        /// holds still to make edits land in the same second. Answers' `Date` headers always
        /// carry the wall clock.
        public var timeSource: @Sendable () -> Int64
        /// How long `sObject Get Deleted` answers for a deleted id (Salesforce: 15 days); the
        /// log before it is purged, and a window starting earlier is refused.
        public var deletedRetention: Duration

        public init(
            host: String = "127.0.0.1", port: Int = 0, token: String, dataPath: String? = nil,
            locatorLifetime: Duration = .seconds(15 * 60), childPageSize: Int = defaultChildPageSize,
            schema: ServerSchema = .standard, clock: ServerClock = .salesforce,
            timeSource: @escaping @Sendable () -> Int64 = WallClock.nowMillis,
            deletedRetention: Duration = defaultDeletedRetention
        ) {
            self.deletedRetention = deletedRetention
            self.schema = schema
            self.clock = clock
            self.timeSource = timeSource
            self.host = host
            self.port = port
            self.token = token
            self.dataPath = dataPath
            self.locatorLifetime = locatorLifetime
            self.childPageSize = childPageSize
        }

        /// Salesforce's: a nested result holds about 200 children before it pages.
        public static let defaultChildPageSize = 200
        /// Salesforce's: the delete log answers for 15 days.
        public static let defaultDeletedRetention: Duration = .seconds(15 * 24 * 3600)
    }

    let configuration: Configuration
    let storage: RecordStorage
    let stats = ServerStats()
    let faults = FaultInjector()
    let held = HeldTransactions()
    let logger: Logger

    /// Opens the storage. Does not listen yet; see ``run(onListening:)``.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        do {
            storage = try RecordStorage(
                path: configuration.dataPath, schema: configuration.schema, clock: configuration.clock,
                now: configuration.timeSource)
        } catch {
            throw SalesforceError(
                status: 500, "STORAGE_UNAVAILABLE", "cannot open server data file: \(error)")
        }
    }

    /// Seeds `count` records of `type` before or while serving (the `--seed` option).
    public func seed(
        type: String, count: Int, timeStamps: Int? = nil, bytes: Int = 0, ageSeconds: Int = 0
    ) throws {
        _ = try storage.seed(
            type: type, count: count, timeStamps: max(1, timeStamps ?? count), bytes: bytes,
            template: [:], ageSeconds: ageSeconds)
    }

    /// Sets the injected faults.
    public func setFaults(_ settings: FaultSettings) {
        faults.settings = settings
    }

    /// Requests received so far, including ones still being handled.
    public var requestCount: Int { stats.requests }

    /// Returns once the server has received `count` requests in all (for tests that must act
    /// while a request is in flight).
    public func waitForRequests(_ count: Int) async {
        await stats.wait(for: .requests, count)
    }

    /// Write requests that have committed so far (counted before any held response goes out).
    public var writesCommitted: Int { stats.writesCommitted }

    /// Faults injected so far, of every kind.
    public var faultsInjected: Int { stats.faultsInjected }

    /// Returns once `count` faults have been injected in all.
    public func waitForFaultsInjected(_ count: Int) async {
        await stats.wait(for: .faultsInjected, count)
    }

    /// Returns once `count` write requests have committed in all.
    public func waitForWritesCommitted(_ count: Int) async {
        await stats.wait(for: .writesCommitted, count)
    }

    /// Serves until the task is cancelled. `onListening` gets the base URL once bound.
    public func run(onListening: @escaping @Sendable (String) async -> Void = { _ in }) async throws {
        try await application(onListening: onListening).run()
    }

    /// The Hummingbird application serving this server's routes.
    func application(onListening: @escaping @Sendable (String) async -> Void) -> some Service {
        let host = configuration.host
        // Long enough request lines for a query past the SOQL length limit, percent-encoded, so
        // such a query gets a MALFORMED_QUERY answer from its route; what the decoder still
        // refuses gets a Salesforce-shaped answer rather than a bare 400.
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: maxRequestHead, maxHeaderListSize: maxRequestHead)
        return Application(
            router: router(),
            server: .http1(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [UndecodableRequestHandler()],
                    httpDecoderConfiguration: decoder)),
            configuration: .init(
                address: .hostname(host, port: configuration.port), serverName: "baton-reference"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                await onListening("http://\(host):\(port)")
            },
            logger: logger
        )
    }

    /// Every route, behind the bearer-token check.
    func router() -> Router<BasicRequestContext> {
        // HEAD answers as GET does, without the body, as on Salesforce.
        let router = Router(options: .autoGenerateHeadEndpoints)
        router.middlewares.add(APIMiddleware(token: configuration.token, stats: stats))
        let data = DataRoutes(
            storage: storage,
            engine: QueryEngine(
                storage: storage, stats: stats, locatorLifetime: configuration.locatorLifetime,
                childPageSize: configuration.childPageSize),
            faults: faults,
            stats: stats, held: held,
            deletedRetention: Int64(configuration.deletedRetention.components.seconds) * 1000)
        router.get("services/data") { _, _ in Response.json(.ok, APIVersions.listing) }
        let versioned = router.group("services/data/:version").add(middleware: APIVersionMiddleware())
        data.register(on: versioned)
        CompositeRoutes(storage: storage, data: data).register(on: versioned)
        DescribeRoutes(storage: storage, data: data).register(on: versioned)
        CompositeRequestRoute(storage: storage, data: data).register(on: versioned)
        AdminRoutes(storage: storage, faults: faults, stats: stats, held: held).register(
            on: router.group("admin"))
        return router
    }

    /// Starts serving in a task of its own and returns once it listens.
    public static func start(_ configuration: Configuration, logger: Logger = Logger(label: "baton.server"))
        async throws
        -> RunningServer
    {
        let server = try ReferenceServer(configuration: configuration, logger: logger)
        let (urls, continuation) = AsyncStream.makeStream(of: String.self)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [server.application { url in continuation.yield(url) }], logger: logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = urls.makeAsyncIterator()
        guard let url = await iterator.next() else {
            await group.triggerGracefulShutdown()
            _ = try await task.value
            throw SalesforceError(status: 500, "SERVER_NOT_STARTED", "the reference server did not start")
        }
        continuation.finish()
        return RunningServer(server: server, url: url, group: group, task: task)
    }
}

/// A server started with ``ReferenceServer/start(_:logger:)``.
public struct RunningServer: Sendable {
    public let server: ReferenceServer
    /// `http://127.0.0.1:PORT`.
    public let url: String
    let group: ServiceGroup
    let task: Task<Void, any Error>

    /// The bearer token.
    public var token: String { server.configuration.token }

    /// Stops serving: a graceful shutdown, which stops accepting, lets the requests in flight
    /// finish and closes every connection (cancelling the serving task instead can trap in
    /// NIO when a connection is accepted at that moment), then waits for it to end.
    public func stop() async {
        await group.triggerGracefulShutdown()
        // The server task's error after a graceful shutdown is the shutdown itself.
        _ = try? await task.value
    }
}

extension ReferenceServer {
    /// A fresh bearer token: 256 random bits in hex.
    public static func generateToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
