import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging
import ServiceLifecycle

/// What `baton participant` runs: a store, a REST client, a sync manager and a ``Participant``
/// in a service group that SIGTERM, SIGINT and SIGHUP shut down gracefully (the lease handed back).
public struct ParticipantLaunch: Sendable {
    public var directory: String
    public var name: String
    public var role: ParticipantRole
    public var priority: Int?
    public var server: String
    public var token: String
    public var specs: SyncSpecs
    public var initialLifecycle: Lifecycle?
    /// Seconds, as the command line gives them.
    public var retryDelay: Double = 0.5
    public var stopDeadline: Double = 5
    /// Seconds a stop lets a page being saved run on; nil finishes the page.
    public var saveGrace: Double?
    public var leaseTerm: Double = 2
    /// What to do about a lease holder frozen inside a write transaction, and after how many
    /// seconds.
    public var frozenHolder: FrozenHolder.Policy = FrozenHolder.standard.policy
    public var frozenBound: Double = 2
    public var busyTimeout: Double = 10
    /// How many syncs the writer runs at once (``SyncManager/setConcurrency(_:)``).
    public var concurrentSyncs = SyncManager.defaultConcurrency
    /// Clean resync ghosts from the server's deletions since the last clean.
    public var incrementalGhosts = false
    /// Bytes at which the participant's log rotates.
    public var logLimit: Int64 = ParticipantLog.defaultLimit
    /// Testing only: while this file exists, store writes fail as its first line says.
    public var storageFaultFile: String?

    public init(
        directory: String, name: String, role: ParticipantRole, server: String, token: String,
        specs: SyncSpecs
    ) {
        self.directory = directory
        self.name = name
        self.role = role
        self.server = server
        self.token = token
        self.specs = specs
    }

    /// The first setting out of range, named as the command line names it.
    public func validate() throws {
        func within(_ value: Double, _ range: ClosedRange<Double>, _ option: String) throws {
            func text(_ seconds: Double) -> String {
                seconds.rounded() == seconds ? String(Int(seconds)) : String(seconds)
            }
            guard range.contains(value) else {
                throw CLIError(
                    message:
                        "\(option) must be between \(text(range.lowerBound)) and \(text(range.upperBound)) seconds"
                )
            }
        }
        guard stopDeadline > 0 else { throw CLIError(message: "--stop-deadline must be positive") }
        if let saveGrace { try within(saveGrace, 0...3600, "--save-grace") }
        try within(leaseTerm, 0.1...3600, "--lease-term")
        try within(frozenBound, 0...3600, "--frozen-bound")
        try within(busyTimeout, 0...3600, "--busy-timeout")
        try within(retryDelay, 0...3600, "--retry-delay")
        guard (1...64).contains(concurrentSyncs) else {
            throw CLIError(message: "--concurrent-syncs must be between 1 and 64")
        }
        guard logLimit >= ParticipantLog.minimumLimit else {
            throw CLIError(message: "--log-limit must be at least \(ParticipantLog.minimumLimit) bytes")
        }
        if let batchSize = specs.batchSize, !(1...2000).contains(batchSize) {
            throw CLIError(message: "--batch-size must be between 1 and 2000")
        }
    }

    /// Runs until SIGTERM, SIGINT or SIGHUP (its terminal went away, or the shell that stopped it
    /// exited); `started` hears the line to print once it runs.
    public func run(started: (String) -> Void) async throws {
        var logger = Logger(label: "baton.participant.\(name)")
        logger[metadataKey: "baton.participant"] = "\(name)"
        // Storage faults only when asked for: without them the store makes no hook call.
        let faults = storageFaultFile.map { file in
            let faults = StorageFaults()
            faults.failWritesWhileFileExists(file)
            return faults
        }
        let client = RESTClient(baseURL: server, token: token, logger: logger)
        // The syncs first: a bad --sync-down or --syncs-config is refused before the store is touched.
        let syncs = try specs.syncs(client: client)
        let store = try SharedStore.open(
            directory: try SharedDirectory(path: directory, create: true), create: true,
            busyTimeout: .milliseconds(Int64(busyTimeout * 1000)), faults: faults, logger: logger)
        let manager = SyncManager(
            store: store, targetFactory: RESTTargetFactory(client: client, store: store), logger: logger)
        await manager.setConcurrency(concurrentSyncs)
        var configuration = ParticipantConfiguration(
            name: name, role: role, priority: priority, syncs: syncs, initialLifecycle: initialLifecycle,
            stopDeadline: .milliseconds(Int(stopDeadline * 1000)),
            saveGrace: saveGrace.map { .microseconds(Int64($0 * 1_000_000)) },
            retryDelay: retryDelay > 0 ? .milliseconds(Int(retryDelay * 1000)) : nil,
            leaseTerm: .milliseconds(Int(leaseTerm * 1000)), logLimit: logLimit,
            frozenHolder: FrozenHolder(
                policy: frozenHolder, bound: .milliseconds(Int(frozenBound * 1000))))
        configuration.incrementalGhostCleaning = incrementalGhosts
        let participant = try Participant(
            configuration: configuration,
            directory: store.directory, store: store, manager: manager, logger: logger)
        let group = ServiceGroup(
            services: [participant], gracefulShutdownSignals: [.sigterm, .sigint, .sighup], logger: logger)
        started("participant \(name) (\(role.rawValue), pid \(getpid())) running in \(store.directory.path)")
        try await group.run()
    }
}
