import BatonCoordinator
import BatonLocking
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// One scripted day: the server, the shared directory, the host and extension processes, and
/// what was measured. Driven from one task (the demo command); not shared across tasks.
public final class DemoRun: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let records: Int
    let batchSize: Int
    let view: any DemoView
    let directoryPath: String
    let keepDirectory: Bool
    let token: String
    let tieSize = 5
    var server: RunningServer?
    var client: RESTClient?
    /// The `baton` executable the participants run.
    let baton: String
    var processes: [String: ChildProcess] = [:]
    /// Monotonic time (ms) of each signal the demo sent, for latency and the report.
    var signals: [(name: String, state: String, t: Double, wall: Int64)] = []
    var touched: [String] = []
    /// Records of a transaction that was stamped while the host synced and committed after the
    /// extension's run was done.
    var committedLate: [String] = []
    let lateCommits = 3
    var deleted: [String] = []
    var servedBeforeReturn = 0
    var servedAfterReturn = 0
    var editedId: String?
    let startedWall = WallClock.nowMillis()

    public init(records: Int, batchSize: Int, keep: String?, view: any DemoView, baton: String) throws {
        self.baton = baton
        self.records = records
        self.batchSize = batchSize
        self.view = view
        if let keep {
            directoryPath = keep
            keepDirectory = true
        } else {
            directoryPath =
                FileManager.default.temporaryDirectory.path + "/baton-demo-" + UUID().uuidString.prefix(8)
            keepDirectory = false
            ChildProcesses.shared.removeOnInterrupt(directoryPath)
        }
        token = ReferenceServer.generateToken()
    }

    var directory: SharedDirectory { get throws { try SharedDirectory(path: directoryPath) } }

    /// Plays the day, stops the participants, writes the HTML timeline to `reportPath` when
    /// given, and removes the temporary directory (not a kept one).
    public func run(reportPath: String?) async throws -> DemoSummary {
        let summary: DemoSummary
        do {
            summary = try await play()
        } catch {
            await stop()
            removeDirectory()
            throw CLIError(message: "the demo could not finish: \(error)")
        }
        await stop()
        if let reportPath { try DemoReport(run: self, summary: summary).write(to: reportPath) }
        removeDirectory()
        return summary
    }

    public func play() async throws -> DemoSummary {
        let shared = try directory
        for sub in [shared.lifecyclePath, shared.participantsPath, shared.logsPath] {
            try shared.ensureSubdirectory(sub)
        }
        var quiet = Logger(label: "baton.demo.server")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: token), logger: quiet)
        self.server = server
        let client = RESTClient(baseURL: server.url, token: token)
        self.client = client
        // Accounts an org has had for a while (the newest modified an hour ago), five to a
        // whole-second stamp as a load in transactions leaves them.
        try await client.adminSeed(
            type: "Account", count: records, timeStamps: max(1, records / tieSize), bytes: 200,
            ageSeconds: 3600)
        try await client.adminSetFaults(["latencyMs": 15])
        view.step(
            "reference server (Salesforce's clock) on \(server.url) with \(records) accounts (\(tieSize) per time stamp)"
        )
        view.step("shared directory \(shared.path)")

        try await startParticipant("host", role: "host", lifecycle: "foreground")
        try await startParticipant("ext", role: "extension", lifecycle: "background")
        try await waitFor("the host to take the baton") { $0.writer == "host" }
        view.step("host holds the baton and syncs down")
        try await waitFor("the host's sync to be mid-way") { $0.sync("accounts")?.progress ?? 0 >= 30 }
        // A server transaction stamped now that commits only after the extension's run is done:
        // its records show up after ones stamped later.
        let late = try await client.adminBeginTransaction(
            type: "Account", count: lateCommits, fields: ["Rating__c": "Warm"])

        try signal("ext", .foreground)
        try signal("host", .background)
        view.step("host went to the background mid-sync: it stops and hands over")
        try await waitFor("the extension to take the baton") { $0.writer == "ext" }
        view.step("extension holds the baton and resumes after the last record the host saved")
        try await waitFor("the resumed sync and its ghost check to finish") {
            $0.writer == "ext" && $0.sync("accounts")?.status == .done && $0.logHas("ext", "ghosts.cleaned")
        }
        servedBeforeReturn = try await served(client)

        committedLate = try await client.adminCommitTransaction(late.id)
        touched = try await client.adminTouch(
            type: "Account", count: max(1, records / 20), fields: ["Rating__c": "Hot"])
        deleted = try await client.adminDelete(type: "Account", count: max(1, records / 50))
        view.step(
            "server: \(committedLate.count) records of a transaction stamped mid-sync committed late; \(touched.count) changed in one transaction (one stamp), \(deleted.count) deleted"
        )

        try signal("host", .foreground)
        view.step("host back in the foreground: it takes the baton back (priority)")
        try await waitFor("the host to take the baton back") { $0.writer == "host" }
        try await waitFor("reSync and clean resync ghosts") { state in
            state.writer == "host" && state.sync("accounts")?.status == .done
                && state.logHas("host", "ghosts.cleaned")
        }
        servedAfterReturn = try await served(client)
        view.step("host reSynced (only what changed) and cleaned resync ghosts")

        try signal("host", .background)
        try signal("ext", .background)
        try await waitFor("nobody to hold the baton") {
            $0.writer == nil && $0.phases.values.allSatisfy { $0 == .background }
        }
        let editTime = WallClock.nowMillis()
        editedId = try await editLocally(shared)
        view.step("a local edit while nobody writes (under the demo's own lease)")
        try signal("host", .foreground)
        try await waitFor("the edit to be synced up") { state in
            state.writer == "host"
                && state.sync("edits").map { $0.status == .done && ($0.endTime ?? 0) > editTime } == true
        }
        view.step("host synced the local edit up")
        return try await DemoSummary.check(self)
    }

    /// The accounts' fields the participants sync down.
    static let syncedFields = ["Id", "Name", "Number__c", "Rating__c", "LastModifiedDate"]

    func startParticipant(_ name: String, role: String, lifecycle: String) async throws {
        let shared = try directory
        let output = shared.logsPath + "/\(name).out"
        processes[name] = try await ChildProcess.start(
            baton,
            [
                "participant", "--dir", shared.path, "--name", name, "--role", role, "--server",
                server?.url ?? "",
                "--lifecycle", lifecycle, "--batch-size", String(batchSize),
                "--sync-down",
                "accounts:accounts:SELECT \(Self.syncedFields.joined(separator: ", ")) FROM Account",
                "--clean-ghosts", "accounts", "--sync-up", "edits:accounts",
                // Two of Mobile Sync's other targets: Account's describe and its compact layout.
                "--sync-down", "describe:descriptions:metadata:Account",
                "--sync-down", "layout:descriptions:layout:Account:Compact",
            ], environment: ["BATON_TOKEN": token], stdout: .file(output), stderr: .file(output))
    }

    func signal(_ name: String, _ lifecycle: Lifecycle) throws {
        signals.append((name, lifecycle.rawValue, MonotonicClock.millis(), WallClock.nowMillis()))
        try LifecycleSignal.write(lifecycle, directory: try directory, name: name)
    }

    func served(_ client: RESTClient) async throws -> Int {
        Int(try await client.adminStats().value(atPath: "recordsServed.Account")?.intValue ?? 0)
    }

    /// Takes the lease as participant `demo`, marks one record edited, releases.
    func editLocally(_ shared: SharedDirectory) async throws -> String? {
        let store = try SharedStore.open(directory: shared, logger: Logger(label: "baton.demo"))
        let lease = try WriterLease(directory: shared, store: store, name: "demo")
        let held = try await lease.acquire(deadline: .now + .seconds(30))
        defer { lease.release(held) }
        return try await store.write(held.fence) { transaction -> String? in
            guard var entry = try transaction.query(SoupQuery(limit: 1), in: "accounts").first else {
                return nil
            }
            entry.record["Name"] = "Edited in the demo"
            try transaction.upsert(
                LocalFlags.markUpdated(entry.record), into: "accounts", entryId: entry.entryId)
            return entry.record["Id"]?.stringValue
        }
    }

    /// What the demo waits on: the writer, each participant's phase, the syncs, the logs.
    struct Observed: Sendable {
        var writer: String?
        var phases: [String: ParticipantPhase]
        var syncs: [String: SyncState]
        var logs: [String: [JSONObject]]

        func sync(_ name: String) -> SyncState? { syncs[name] }
        func logHas(_ participant: String, _ event: String) -> Bool {
            logs[participant]?.contains { $0["event"]?.stringValue == event } ?? false
        }
    }

    func observe() -> Observed {
        guard let shared = try? directory else {
            return Observed(writer: nil, phases: [:], syncs: [:], logs: [:])
        }
        let participants = ParticipantStatus.readAll(in: shared)
        var syncs: [String: SyncState] = [:]
        if let store = try? SharedStore.open(
            directory: shared, create: false, logger: Logger(label: "baton.demo"))
        {
            for state in (try? SyncState.all(store)) ?? [] {
                if let name = state.name { syncs[name] = state }
            }
        }
        var logs: [String: [JSONObject]] = [:]
        for name in ["host", "ext"] { logs[name] = Self.readLog(shared, name) }
        return Observed(
            writer: participants.first { $0.isWriter && $0.isAlive }?.name,
            phases: Dictionary(participants.map { ($0.name, $0.phase) }, uniquingKeysWith: { a, _ in a }),
            syncs: syncs,
            logs: logs)
    }

    /// A participant's log events, the rotated file's included.
    static func readLog(_ shared: SharedDirectory, _ name: String) -> [JSONObject] {
        ParticipantLogReader.events(directory: shared, name: name)
    }

    /// Waits (on inotify events in the shared directory, never by polling) until `condition`
    /// holds, redrawing the live view on the way.
    func waitFor(
        _ what: String, timeout: Duration = .seconds(120), _ condition: @escaping @Sendable (Observed) -> Bool
    ) async throws {
        let shared = try directory
        let view = self.view
        let observe: @Sendable () -> Observed = { [self] in self.observe() }
        let show: @Sendable (Observed, Bool) -> Void = { state, plain in
            let syncs = state.syncs.values.sorted { $0.id < $1.id }.map {
                ($0.name ?? "#\($0.id)", $0.status.rawValue, $0.progress)
            }
            view.state(
                writer: state.writer.map { "\($0) writes" } ?? "nobody writes", syncs: syncs,
                printPlain: plain)
        }
        let lastPlain = Locked(ContinuousClock.now)
        let met = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["participants", "lifecycle", "logs"],
            reportsModifications: true
        )
        .wait(timeout: timeout) {
            let state = observe()
            let plain = lastPlain.withLock { last in
                guard ContinuousClock.now - last > .seconds(1) else { return false }
                last = .now
                return true
            }
            show(state, plain)
            return condition(state)
        }
        if !met { throw Failure(description: "timed out waiting for \(what)") }
    }

    /// Stops the participants (SIGTERM: they release everything) and the server.
    public func stop() async {
        for process in processes.values { await process.send(SIGTERM) }
        for process in processes.values { await process.wait() }
        processes = [:]
        await server?.stop()
        server = nil
    }

    /// Removes the temporary directory (never a `--keep` one).
    public func removeDirectory() {
        if !keepDirectory { try? FileManager.default.removeItem(atPath: directoryPath) }
    }
}
