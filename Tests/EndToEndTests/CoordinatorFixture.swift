import BatonCoordinator
import BatonJSON
import BatonREST
import BatonServer
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

/// A live reference server (in this process, port 0), a shared directory, and `baton
/// participant` processes started against them.
final class CoordinatorFixture: @unchecked Sendable {
    let temp: TemporaryDirectory
    let dir: String
    let server: RunningServer
    let client: RESTClient
    private(set) var processes: [String: BatonProcess] = [:]

    init(records: Int, timeStamps: Int? = nil, bytes: Int = 0) async throws {
        temp = try TemporaryDirectory()
        dir = temp.path + "/shared"
        // As a user would (`mktemp -d`): the shared directory exists before anything waits on it.
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        var quiet = Logger(label: "test.server")
        quiet.logLevel = .critical
        server = try await ReferenceServer.start(.init(token: "e2e-token"), logger: quiet)
        client = RESTClient(baseURL: server.url, token: "e2e-token")
        if records > 0 {
            try await client.adminSeed(type: "Account", count: records, timeStamps: timeStamps, bytes: bytes)
        }
    }

    /// Starts `baton participant` with a sync down of every Account.
    @discardableResult
    ///
    /// - Parameter tracked: whether ``finish()`` stops it (a process expected to fail at once
    ///   is not tracked).
    func start(
        _ name: String, role: String, lifecycle: String, batchSize: Int = 500,
        query: String = "SELECT Id, Name, Number__c FROM Account", extra: [String] = [], tracked: Bool = true
    ) async throws -> BatonProcess {
        let process = try await BatonProcess(
            [
                "participant", "--dir", dir, "--name", name, "--role", role, "--server", server.url,
                "--lifecycle", lifecycle,
                "--sync-down", "accounts:accounts:\(query)", "--batch-size",
                String(batchSize),
            ] + extra, environment: ["BATON_TOKEN": "e2e-token"])
        if tracked { processes[name] = process }
        return process
    }

    /// `baton wait … --timeout S`; true when the condition held in time.
    func wait(_ condition: [String], timeout: Int = 60) async throws -> Bool {
        let result = try await BatonProcess.run(
            ["wait", "--dir", dir] + condition + ["--timeout", String(timeout)])
        return result.status == 0
    }

    func signal(_ name: String, _ state: String) async throws {
        let result = try await BatonProcess.run(["signal", "--dir", dir, name, state])
        #expect(result.status == 0, "stderr: \(result.stderr)")
    }

    /// The participant's JSON-lines log, the file it rotated to first.
    func log(_ name: String) -> [JSONObject] {
        ParticipantLogReader(path: dir + "/logs/\(name).jsonl").newEvents()
    }

    /// Waits, on inotify events in D/logs, until `condition` holds for the participant's log.
    func waitForLog(
        _ name: String, _ what: String, timeout: Duration = .seconds(90),
        _ condition: @escaping @Sendable ([JSONObject]) -> Bool
    ) async throws {
        try FileManager.default.createDirectory(atPath: dir + "/logs", withIntermediateDirectories: true)
        let met = try await DirectoryWatcher(root: dir, subdirectories: ["logs"], reportsModifications: true)
            .wait(timeout: timeout) { [self] in condition(log(name)) }
        if !met {
            // The log's last events say where it stood.
            let tail = log(name).filter { $0["event"] != "sync" }.suffix(16).map { "\($0)" }
                .joined(separator: "\n")
            throw ProcessTimeout(
                what: "\(name)'s log to show \(what); its last events other than sync states:\n\(tail)")
        }
    }

    /// Waits, on inotify events in D/participants, until `condition` holds for the published
    /// statuses.
    func waitForStatus(
        _ what: String, timeout: Duration = .seconds(90),
        _ condition: @escaping @Sendable ([ParticipantStatus]) -> Bool
    ) async throws {
        let shared = try SharedDirectory(path: dir)
        try shared.ensureSubdirectory(shared.participantsPath)
        let met = try await DirectoryWatcher(root: dir, subdirectories: ["participants"])
            .wait(timeout: timeout) { condition(ParticipantStatus.readAll(in: shared)) }
        if !met {
            // What was published, what is in the directory, and what each log said last.
            let statuses = ParticipantStatus.readAll(in: shared).map {
                "\($0.name) pid \($0.pid) \($0.phase.rawValue) problem \($0.problem ?? "-")"
            }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: shared.participantsPath)) ?? []
            let logs = processes.keys.sorted().map { name in
                "\(name): "
                    + log(name).filter { $0["event"] != "sync" }.suffix(8).map { "\($0)" }.joined(
                        separator: "\n")
            }
            throw ProcessTimeout(
                what:
                    "\(what); published: \(statuses); participants/: \(files.sorted())\n\(logs.joined(separator: "\n"))"
            )
        }
    }

    func storeInfo() async throws -> JSONValue {
        let result = try await BatonProcess.run(["store", "info", "--dir", dir, "--json"])
        return try JSONValue(parsing: result.stdout)
    }

    func syncState(_ name: String) async throws -> JSONValue? {
        let result = try await BatonProcess.run(["syncs", "--dir", dir, "--json"])
        return try JSONValue(parsing: result.stdout).arrayValue?.first {
            $0.value(atPath: "name")?.stringValue == name
        }
    }

    func served() async throws -> Int {
        Int(try await client.adminStats().value(atPath: "recordsServed.Account")?.intValue ?? 0)
    }

    /// SIGTERMs every participant and waits for them; then stops the server.
    ///
    /// - Parameter lockedExpected: the test held SQLite's lock from outside on purpose, so
    ///   "database is locked" on stderr is expected.
    func finish(lockedExpected: Bool = false) async throws {
        for process in processes.values where process.isRunning { await process.send(SIGTERM) }
        for (name, process) in processes {
            let result = try await process.wait(timeout: .seconds(60))
            if !lockedExpected {
                #expect(
                    !result.stderr.contains("SQLITE_BUSY") && !result.stderr.contains("database is locked"),
                    "\(name): \(result.stderr)")
            }
        }
        await server.stop()
    }
}
