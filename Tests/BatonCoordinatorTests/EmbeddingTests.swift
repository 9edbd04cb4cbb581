import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

/// The lines of `D/logs/NAME.jsonl` (with the file it rotated to), and a wait for one on inotify.
struct ParticipantLogTail {
    let shared: SharedDirectory
    let name: String

    init(_ shared: SharedDirectory, _ name: String) {
        self.shared = shared
        self.name = name
    }

    var lines: [JSONObject] { ParticipantLogReader.events(directory: shared, name: name) }

    func wait(_ what: String, _ condition: @escaping @Sendable (JSONObject) -> Bool) async throws {
        let shared = self.shared
        let name = self.name
        let met = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["logs"], reportsModifications: true
        )
        .wait(timeout: .seconds(60)) { ParticipantLogTail(shared, name).lines.contains(where: condition) }
        if !met { Issue.record("timed out waiting for \(what)") }
    }
}

/// The participant as an app embeds it: a service, lifecycle from code, local edits.
@Suite("Embedding a participant", .timeLimit(.minutes(3)))
struct EmbeddingTests {
    struct World {
        let temp: TemporaryDirectory
        let shared: SharedDirectory
        let server: RunningServer
        let client: RESTClient
        let logger: Logger

        init(records: Int = 50) async throws {
            temp = try TemporaryDirectory()
            shared = try SharedDirectory(path: temp.path + "/d")
            var quiet = Logger(label: "test")
            quiet.logLevel = .critical
            logger = quiet
            server = try await ReferenceServer.start(.init(token: "t"), logger: quiet)
            client = RESTClient(baseURL: server.url, token: "t")
            try await client.adminSeed(type: "Account", count: records)
        }

        func participant(_ name: String, role: ParticipantRole, _ lifecycle: Lifecycle) throws
            -> TestParticipant
        {
            try TestParticipant(
                name, role: role, lifecycle, shared: shared, client: client, logger: logger, batchSize: 20)
        }
    }

    @Test("lifecycle from code has the file's effect; a shell's file still overrides it")
    func lifecycleFromCode() async throws {
        let world = try await World()
        let shared = world.shared
        let host = try world.participant("host", role: .host, .background).participant
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.run() }
            try await waitUntil(shared, "host to publish") { status(shared, "host")?.phase == .background }
            try host.enterForeground()
            #expect(LifecycleSignal.read(directory: shared, name: "host") == .valid(.foreground))
            try await waitUntil(shared, "host to write") { status(shared, "host")?.isWriter == true }
            try host.enterBackground()
            try await waitUntil(shared, "host to let go") { status(shared, "host")?.phase == .background }
            // The file is the truth: a shell brings it back.
            try LifecycleSignal.write(.foreground, directory: shared, name: "host")
            try await waitUntil(shared, "host to write again") { status(shared, "host")?.isWriter == true }
            host.shutdown()
            try await group.waitForAll()
        }
        await world.server.stop()
    }

    @Test(
        "local edits: refused at once off the lease, naming the writer; waited for on request; marked local; fenced"
    )
    func localEdits() async throws {
        let world = try await World()
        let shared = world.shared
        let host = try world.participant("host", role: .host, .foreground)
        let ext = try world.participant("ext", role: .appExtension, .background)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.participant.run() }
            group.addTask { try await ext.participant.run() }
            try await waitUntil(shared, "host to write") { status(shared, "host")?.isWriter == true }
            try await waitUntil(shared, "ext to publish") { status(shared, "ext") != nil }

            // The extension is not the writer: refused at once, naming who is.
            await #expect {
                try await ext.participant.write { try $0.create(["Name": "too early"], in: "accounts") }
            } throws: { error in
                guard let error = error as? CoordinatorError, error.code == .notWriter else { return false }
                return error.message.contains("'host'")
            }
            // Waiting for the lease, up to a deadline that passes: refused too.
            await #expect {
                try await ext.participant.write(waitingUpTo: .milliseconds(200)) {
                    try $0.create(["Name": "still early"], in: "accounts")
                }
            } throws: { ($0 as? CoordinatorError)?.code == .notWriter }

            // The host edits as the writer: marked local, committed under its epoch.
            let created = try await host.participant.write { edits in
                try edits.create(["Name": "made on the host"], in: "accounts")
            }
            #expect(LocalFlags.isCreated(created.record))
            #expect(LocalFlags.isDirty(created.record))
            let epoch = try #require(status(shared, "host")?.epoch)
            let commit = try await host.store.read { try $0.commitLog().last }
            #expect(commit?.fencedEpoch == epoch)

            // The extension asks to wait; the host goes to the background; the edit lands.
            let waiting = Task {
                try await ext.participant.write(waitingUpTo: .seconds(60)) { edits in
                    try edits.update(created.entryId, in: "accounts") {
                        $0["Name"] = "edited on the extension"
                    }
                }
            }
            try ext.participant.enterForeground()
            try host.participant.enterBackground()
            let updated = try await waiting.value
            #expect(updated.record["Name"] == "edited on the extension")
            #expect(LocalFlags.isCreated(updated.record) && LocalFlags.isUpdated(updated.record))

            // A body that throws rolls back whole.
            await #expect(throws: StoreError.self) {
                try await ext.participant.write { edits in
                    try edits.delete(created.entryId, in: "accounts")
                    try edits.delete(999_999, in: "accounts")
                }
            }
            let kept = try await ext.store.read { try $0.entry(created.entryId, in: "accounts") }
            #expect(kept.map { LocalFlags.isDeleted($0.record) } == false)

            host.participant.shutdown()
            ext.participant.shutdown()
            try await group.waitForAll()
        }
        let store = try SharedStore.open(directory: shared, logger: world.logger)
        let (history, commits) = try await store.read { (try $0.leaseHistory(), try $0.commitLog()) }
        let folded = LeaseHistory.fold(history, record: HeartbeatRecord.read(at: shared.writerLockPath))
        #expect(LeaseAudit.check(folded).isEmpty)
        // Every commit came from a lease holder, the schema set-up too.
        let report = LeaseAudit.checkCommits(commits, history: folded, strict: true)
        #expect(report.violations.isEmpty, "\(report.violations)")
        await world.server.stop()
    }

    @Test(
        "configured soups: registered under the lease when it becomes the writer, before its first edit; another process starting commits nothing"
    )
    func configuredSoups() async throws {
        let world = try await World()
        let shared = world.shared
        func participant(_ name: String, role: ParticipantRole, _ lifecycle: Lifecycle) throws -> Participant
        {
            let store = try SharedStore.open(directory: shared, logger: world.logger)
            let manager = SyncManager(
                store: store, targetFactory: RESTTargetFactory(client: world.client), logger: world.logger)
            return try Participant(
                configuration: ParticipantConfiguration(
                    name: name, role: role,
                    soups: [SoupSpec("notes", indexSpecs: [IndexSpec(path: "Id", type: .string)])],
                    initialLifecycle: lifecycle),
                directory: shared, store: store, manager: manager, logger: world.logger)
        }
        let host = try participant("host", role: .host, .foreground)
        let ext = try participant("ext", role: .appExtension, .background)
        let reader = try SharedStore.open(directory: shared, logger: world.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.run() }
            // At once: the edit waits for the writer to start, whose first write made the soup.
            let note = try await host.write(waitingUpTo: .seconds(30)) { edits in
                try edits.create(["Name": "first"], in: "notes")
            }
            #expect(try reader.entry(note.entryId, in: "notes")?.record["Name"] == "first")
            let before = try reader.changeSequence()
            group.addTask { try await ext.run() }
            try await waitUntil(shared, "ext to publish") { status(shared, "ext")?.phase == .background }
            #expect(try reader.changeSequence() == before, "a process starting committed something")
            host.shutdown()
            ext.shutdown()
            try await group.waitForAll()
        }
        let audit = try LeaseAuditTestSupport.strictViolations(reader)
        #expect(audit.isEmpty, "\(audit)")
        let commits = try await reader.read { try $0.commitLog() }
        #expect(commits.allSatisfy { $0.fencedEpoch != nil }, "\(commits)")
        await world.server.stop()
    }

    @Test("a lease lost while the body runs rolls the body back and says why")
    func lostMidBody() async throws {
        let world = try await World()
        let shared = world.shared
        let host = try world.participant("host", role: .host, .foreground)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.participant.run() }
            try await waitUntil(shared, "host to write") { status(shared, "host")?.isWriter == true }
            await #expect {
                try await host.participant.write { edits in
                    try edits.create(["Name": "never"], in: "accounts")
                    // Somebody deletes the lock file meanwhile: another process could lock a new one.
                    try FileManager.default.removeItem(atPath: shared.writerLockPath)
                }
            } throws: { error in
                guard let error = error as? CoordinatorError, error.code == .leaseLost else { return false }
                return error.message.contains("nothing was written")
            }
            let all = try await host.store.read { try $0.query(.all, in: "accounts") }
            #expect(!all.contains { $0.record["Name"] == "never" })
            host.participant.shutdown()
            try await group.waitForAll()
        }
        await world.server.stop()
    }

    @Test("events: typed, in order, the same as the log records; they end with the run")
    func events() async throws {
        let world = try await World()
        let shared = world.shared
        let host = try world.participant("host", role: .host, .foreground).participant
        let events = host.events
        let collected = Task {
            var seen: [ParticipantEvent] = []
            for await event in events { seen.append(event) }
            return seen
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.run() }
            try await waitUntil(shared, "host to write") { status(shared, "host")?.isWriter == true }
            let log = ParticipantLogTail(shared, "host")
            try await log.wait("the sync done") { $0["event"] == "sync" && $0["status"] == "done" }
            try host.enterBackground()
            try await waitUntil(shared, "host to let go") { status(shared, "host")?.phase == .background }
            host.shutdown()
            try await group.waitForAll()
        }
        let seen = await collected.value
        #expect(seen.first == .lifecycle(.foreground))
        #expect(seen.contains(.leaseWaiting))
        let acquired = try #require(
            seen.firstIndex { if case .leaseAcquired = $0 { return true } else { return false } })
        let done = try #require(
            seen.firstIndex {
                if case .sync(let state) = $0 { return state.status == .done } else { return false }
            })
        let released = try #require(
            seen.firstIndex {
                if case .leaseReleased(_, .background, _) = $0 { return true } else { return false }
            })
        #expect(acquired < done && done < released)
        #expect(seen.contains(.manager(.acceptingSyncs)))
        #expect(seen.contains(.lifecycle(.background)))
        // The log holds the same events, in the same order.
        let typedNames = Set(seen.map(\.logName))
        let logged = ParticipantLogTail(shared, "host").lines.compactMap { $0["event"]?.stringValue }
            .filter { typedNames.contains($0) }
        #expect(logged == seen.map(\.logName))
        await world.server.stop()
    }

    @Test("as a service: a graceful shutdown of its group hands the lease back and ends the run")
    func service() async throws {
        let world = try await World()
        let shared = world.shared
        let host = try world.participant("host", role: .host, .foreground).participant
        let group = ServiceGroup(services: [host], gracefulShutdownSignals: [], logger: world.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await waitUntil(shared, "host to write") { status(shared, "host")?.isWriter == true }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(status(shared, "host")?.phase == .finished)
        #expect(HeartbeatRecord.read(at: shared.writerLockPath)?.released ?? 0 > 0)
        await world.server.stop()
    }
}

/// `baton lease check --strict`, in process.
enum LeaseAuditTestSupport {
    static func strictViolations(_ store: SharedStore) throws -> [LeaseAudit.Violation] {
        let (history, commits) = try store.read { (try $0.leaseHistory(), try $0.commitLog()) }
        let folded = LeaseHistory.fold(
            history, record: HeartbeatRecord.read(at: store.directory.writerLockPath))
        return LeaseAudit.check(folded)
            + LeaseAudit.checkCommits(commits, history: folded, strict: true).violations
    }
}
