import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
import Logging
import Testing

/// Waits, on inotify events in the shared directory, until `condition` holds.
func waitUntil(
    _ shared: SharedDirectory, timeout: Duration = .seconds(60), _ what: String,
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    try shared.ensureSubdirectory(shared.participantsPath)
    try shared.ensureSubdirectory(shared.lifecyclePath)
    let met = try await DirectoryWatcher(root: shared.path, subdirectories: ["participants", "lifecycle"])
        .wait(timeout: timeout, until: condition)
    if !met { Issue.record("timed out waiting for \(what)") }
}

func status(_ shared: SharedDirectory, _ name: String) -> ParticipantStatus? {
    ParticipantStatus.readAll(in: shared).first { $0.name == name }
}

/// A shared directory in a temporary folder, a quiet logger and a reference server (port 0):
/// what every participant test here starts from.
struct ParticipantTestBed {
    let temp: TemporaryDirectory
    let shared: SharedDirectory
    let quiet: Logger
    let server: RunningServer

    static func start() async throws -> ParticipantTestBed {
        let temp = try TemporaryDirectory()
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        return ParticipantTestBed(
            temp: temp, shared: try SharedDirectory(path: temp.path + "/d"), quiet: quiet,
            server: try await ReferenceServer.start(.init(token: "t"), logger: quiet))
    }
}

/// A participant in this process, with a store handle and a sync manager of its own (as a
/// separate process would have), syncing every Account down into the `accounts` soup.
struct TestParticipant {
    let participant: Participant
    let manager: SyncManager
    let store: SharedStore

    init(
        _ name: String, role: ParticipantRole, _ lifecycle: Lifecycle, shared: SharedDirectory,
        client: RESTClient,
        logger: Logger, batchSize: Int, retryDelay: Duration = .milliseconds(500),
        maxRetryDelay: Duration = .seconds(30)
    ) throws {
        store = try SharedStore.open(directory: shared, faults: StorageFaults(), logger: logger)
        manager = SyncManager(store: store, targetFactory: RESTTargetFactory(client: client), logger: logger)
        let target = try SoqlSyncDownTarget(
            client: client, query: "SELECT Id, Name FROM Account", batchSize: batchSize)
        let configuration = ParticipantConfiguration(
            name: name, role: role,
            syncs: [.down(name: "accounts", soup: "accounts", target: target, options: SyncOptions())],
            initialLifecycle: lifecycle, retryDelay: retryDelay, maxRetryDelay: maxRetryDelay)
        participant = try Participant(
            configuration: configuration, directory: shared, store: store, manager: manager, logger: logger)
    }
}

@Suite("Participants in one process")
struct ParticipantTests {
    @Test(
        "participants/ replaced between claiming the name and watching the directory: the name and status are taken again",
        .timeLimit(.minutes(1)))
    func participantsReplacedBeforeTheWatch() async throws {
        let bed = try await ParticipantTestBed.start()
        let (shared, quiet, server) = (bed.shared, bed.quiet, bed.server)
        let client = RESTClient(baseURL: server.url, token: "t")
        let host = try TestParticipant(
            "host", role: .host, .background, shared: shared, client: client, logger: quiet, batchSize: 200)
        // The name is claimed (participants/host.lock); before run() watches the directory, it
        // is moved away and made again, as a cleanup script might: no event will say so.
        #expect(rename(shared.participantsPath, bed.temp.path + "/participants-gone") == 0)
        try FileManager.default.createDirectory(
            atPath: shared.participantsPath, withIntermediateDirectories: false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.participant.run() }
            try await waitUntil(shared, timeout: .seconds(20), "host to publish with its name held") {
                status(shared, "host") != nil
            }
            #expect(FileManager.default.fileExists(atPath: shared.participantsPath + "/host.lock"))
            #expect {
                try TestParticipant(
                    "host", role: .host, .background, shared: shared, client: client, logger: quiet,
                    batchSize: 200)
            } throws: { ($0 as? CoordinatorError)?.code == .nameInUse }
            host.participant.shutdown()
            try await group.waitForAll()
        }
        await server.stop()
        withExtendedLifetime(bed) {}
    }

    @Test(
        "an extension yields the lease to the host; the extension's sync calls then name the writer",
        .timeLimit(.minutes(2)))
    func priorityYield() async throws {
        let bed = try await ParticipantTestBed.start()
        let (shared, quiet, server) = (bed.shared, bed.quiet, bed.server)
        let client = RESTClient(baseURL: server.url, token: "t")
        try await client.adminSeed(type: "Account", count: 3000)
        try await client.adminSetFaults(["latencyMs": 40])

        let extensionParticipant = try TestParticipant(
            "ext", role: .appExtension, .foreground, shared: shared, client: client, logger: quiet,
            batchSize: 200)
        let (ext, extManager) = (extensionParticipant.participant, extensionParticipant.manager)
        let host = try TestParticipant(
            "host", role: .host, .background, shared: shared, client: client, logger: quiet, batchSize: 200
        ).participant
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await ext.run() }
            try await waitUntil(shared, "ext to write") { status(shared, "ext")?.isWriter == true }
            group.addTask { try await host.run() }
            try await waitUntil(shared, "host to publish") { status(shared, "host") != nil }

            try LifecycleSignal.write(.foreground, directory: shared, name: "host")
            try await waitUntil(shared, "host to take the lease") {
                status(shared, "host")?.isWriter == true && status(shared, "ext")?.isWaiting == true
            }
            #expect(status(shared, "ext")?.isWriter == false)

            let target = try SoqlSyncDownTarget(client: client, query: "SELECT Id FROM Account")
            await #expect {
                try await extManager.syncDown(target: target, soupName: "accounts")
            } throws: { error in
                guard let error = error as? SyncError else { return false }
                return error.code == .notAcceptingSyncs && error.message.contains("'host'")
            }

            host.shutdown()
            ext.shutdown()
            try await group.waitForAll()
        }
        let store = try SharedStore.open(directory: shared, logger: quiet)
        let history = try await store.read { try $0.leaseHistory() }
        #expect(LeaseAudit.check(history).isEmpty)
        #expect(history.map(\.name).starts(with: ["ext", "host"]))
        await server.stop()
        withExtendedLifetime(bed) {}
    }

    @Test(
        "a writer runs a failed sync again, with a growing delay, until it is done", .timeLimit(.minutes(2)))
    func retriesFailedSync() async throws {
        let bed = try await ParticipantTestBed.start()
        let (shared, quiet, server) = (bed.shared, bed.quiet, bed.server)
        let client = RESTClient(baseURL: server.url, token: "t", retry: .none)
        try await client.adminSeed(type: "Account", count: 30)
        try await client.adminSetFaults(["failNext": 3])

        let store = try SharedStore.open(directory: shared, logger: quiet)
        let manager = SyncManager(
            store: store, targetFactory: RESTTargetFactory(client: client), logger: quiet)
        let target = try SoqlSyncDownTarget(
            client: client, query: "SELECT Id, Name FROM Account", batchSize: 10)
        let participant = try Participant(
            configuration: ParticipantConfiguration(
                name: "host", role: .host,
                syncs: [.down(name: "accounts", soup: "accounts", target: target, options: SyncOptions())],
                initialLifecycle: .foreground, retryDelay: .milliseconds(20)),
            directory: shared, store: store, manager: manager, logger: quiet)
        @Sendable func events() -> [JSONObject] {
            ParticipantLogReader.events(directory: shared, name: "host")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await participant.run() }
            try shared.ensureSubdirectory(shared.logsPath)
            let done = try await DirectoryWatcher(
                root: shared.path, subdirectories: ["logs"], reportsModifications: true
            ).wait(timeout: .seconds(60)) {
                events().contains { $0["event"] == "sync" && $0["status"] == "done" }
            }
            #expect(done)
            participant.shutdown()
            try await group.waitForAll()
        }
        let log = events()
        let retries = log.filter { $0["event"] == "sync.retry" }
        #expect(retries.map { $0["attempt"]?.intValue } == [1, 2, 3])
        #expect(retries.map { $0["delayMs"]?.doubleValue } == [20, 40, 80])
        #expect(log.filter { $0["event"] == "sync" && $0["status"] == "failed" }.count == 3)
        #expect(try store.count(in: "accounts") == 30)
        await server.stop()
        withExtendedLifetime(bed) {}
    }
}

@Suite("A holding whose epoch moved before its first write")
struct StaleHoldingTests {
    @Test(
        "another process records a newer epoch before the new holder's first write: it steps down, fenced, and takes the lease again with a fresh epoch",
        .timeLimit(.minutes(2)))
    func stepsDownAndRetakes() async throws {
        let bed = try await ParticipantTestBed.start()
        let (shared, quiet, server) = (bed.shared, bed.quiet, bed.server)
        let client = RESTClient(baseURL: server.url, token: "t")
        try await client.adminSeed(type: "Account", count: 20)
        let host = try TestParticipant(
            "host", role: .host, .foreground, shared: shared, client: client, logger: quiet, batchSize: 10)
        // Just before the holding's first write: another process (its lock on a writer.lock that
        // was replaced meanwhile) records the next epoch, as in a chaos run's junk burst.
        let intruder = try UnfencedStore.open(directory: shared, logger: quiet)
        host.store.injected.beforeWrite(1) {
            _ = try? intruder.write { try $0.beginLeaseEpoch(name: "intruder", pid: 1) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.participant.run() }
            try await waitForLog(shared, "host", "the host to step down and sync under a fresh epoch") {
                events in
                guard let lost = events.firstIndex(where: { $0["event"] == "lease.lost" }) else {
                    return false
                }
                return events[lost...].contains {
                    $0["event"] == "sync" && $0["status"] == "done" && ($0["totalSize"]?.intValue ?? 0) == 20
                }
            }
            host.participant.shutdown()
            try await group.waitForAll()
        }
        let history = try await intruder.store.read { try $0.leaseHistory() }
        // The stale holding never recorded; the intruder's epoch did; the host's next one did.
        #expect(history.map(\.name) == ["intruder", "host"])
        #expect(LeaseAudit.check(history) == [])
        #expect(try intruder.store.count(in: "accounts") == 20)
        try intruder.close()
        await server.stop()
        withExtendedLifetime(bed) {}
    }
}
