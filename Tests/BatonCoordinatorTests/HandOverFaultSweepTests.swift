import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
import Logging
import Testing

/// The storage-fault sweep over a hand-over: every write of the participant that lets go (its
/// syncs' `stopped`, its lease record) and of the one that takes over (its lease record, the
/// recovery, the restart, the pages, the end) fails in turn, once per error kind. The hand-over
/// must still complete by itself, with every record and a sound lease history.
@Suite("Storage-fault sweep over a hand-over", .timeLimit(.minutes(5)))
struct HandOverFaultSweepTests {
    enum Side: String, CaseIterable, Sendable {
        case releasing
        case taking
    }

    @Test("every write of both sides, every error kind: the hand-over completes, nothing is lost")
    func sweep() async throws {
        var quiet = Logger(label: "test.handover")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "t"), logger: quiet)
        let client = RESTClient(baseURL: server.url, token: "t")
        var violations: [String] = []
        for side in Side.allCases {
            let writes = try await runCase(side: side, fault: nil, client: client, logger: quiet)
            violations += writes.violations.map { "\(side.rawValue), no fault: \($0)" }
            // Releasing: the sync's `stopped` (the release itself goes into the lock file).
            // Taking: the recovery (which records the lease too), the restart, pages, the end.
            #expect(
                writes.count >= (side == .releasing ? 1 : 4),
                "\(side.rawValue) side made \(writes.count) writes")
            for write in 1...max(1, writes.count) {
                for kind in StorageFaults.Kind.allCases {
                    let outcome = try await runCase(
                        side: side, fault: (write, kind), client: client, logger: quiet)
                    violations += outcome.violations.map {
                        "\(side.rawValue) side, write \(write) failing with \(kind.rawValue): \($0)"
                    }
                }
            }
        }
        #expect(violations == [])
        await server.stop()
    }

    /// One hand-over from `ext` (writer, done) to `host`; returns the violations and the number
    /// of writes the faulted side made during it.
    func runCase(
        side: Side, fault: (Int, StorageFaults.Kind)?, client: RESTClient, logger: Logger
    ) async throws -> (violations: [String], count: Int) {
        _ = try await client.adminReset(type: "Account")
        try await client.adminSeed(type: "Account", count: 30)
        try await client.adminSetFaults(["latencyMs": 30])
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")

        func participant(_ name: String, role: ParticipantRole, _ lifecycle: Lifecycle) throws -> (
            Participant, SharedStore
        ) {
            let made = try TestParticipant(
                name, role: role, lifecycle, shared: shared, client: client, logger: logger, batchSize: 10,
                retryDelay: .milliseconds(20), maxRetryDelay: .milliseconds(200))
            return (made.participant, made.store)
        }

        let (ext, extStore) = try participant("ext", role: .appExtension, .foreground)
        let (host, hostStore) = try participant("host", role: .host, .background)
        let faulted = side == .releasing ? extStore : hostStore
        var violations: [String] = []
        var count = 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await ext.run() }
            group.addTask { try await host.run() }
            try await waitUntil(shared, "host to publish") { status(shared, "host") != nil }
            // Mid-sync: the writer lets go of a running sync, which the new one resumes.
            try await waitForLog(shared, "ext", "ext's first committed page") { events in
                events.contains { $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0 }
            }

            let start = faulted.injected.writeCount
            if let (write, kind) = fault { faulted.injected.failWrite(write, with: kind) }
            try LifecycleSignal.write(.background, directory: shared, name: "ext")
            try LifecycleSignal.write(.foreground, directory: shared, name: "host")
            let settled = try await waitForLog(
                shared, "host", "host to take over and finish", required: false
            ) { events in
                guard let acquired = events.lastIndex(where: { $0["event"] == "lease.acquired" }) else {
                    return false
                }
                return events[acquired...].contains {
                    $0["event"] == "sync" && $0["status"] == "done" && $0["totalSize"]?.intValue ?? 0 > 0
                }
            }
            if !settled { violations.append("the host never finished its sync after taking over") }
            count = faulted.injected.writeCount - start
            host.shutdown()
            ext.shutdown()
            try await group.waitForAll()
        }

        let reader = try SharedStore.open(directory: shared, logger: logger)
        let local = try reader.query(.all, in: "accounts").map(\.record)
        let server = try await client.adminRecords(type: "Account")
        let byId = Dictionary(local.compactMap { r in r["Id"]?.stringValue.map { ($0, r) } }) { a, _ in a }
        if local.count != server.count {
            violations.append("\(local.count) records on the store, \(server.count) on the server")
        }
        for record in server where byId[record["Id"]?.stringValue ?? ""]?["Name"] != record["Name"] {
            violations.append("record \(record["Id"]?.stringValue ?? "?") is missing or stale on the store")
            break
        }
        let history = try await reader.read { try $0.leaseHistory() }
        violations += LeaseAudit.check(history).map { "lease history: \($0)" }
        let stuck = try SyncState.getSyncsWithStatus(reader, .running)
        if !stuck.isEmpty { violations.append("syncs left running after both shut down: \(stuck.map(\.id))") }
        try reader.close()
        return (violations, count)
    }
}

/// Waits, on inotify events in D/logs, until `condition` holds for the participant's log; with
/// `required`, a timeout is recorded as an issue.
@discardableResult
func waitForLog(
    _ shared: SharedDirectory, _ name: String, _ what: String, timeout: Duration = .seconds(30),
    required: Bool = true, _ condition: @escaping @Sendable ([JSONObject]) -> Bool
) async throws -> Bool {
    try shared.ensureSubdirectory(shared.logsPath)
    let met = try await DirectoryWatcher(
        root: shared.path, subdirectories: ["logs"], reportsModifications: true
    )
    .wait(timeout: timeout) { condition(ParticipantLogReader.events(directory: shared, name: name)) }
    if !met, required { Issue.record("timed out waiting for \(what)") }
    return met
}
