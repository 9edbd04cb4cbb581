import BatonJSON
import BatonREST
import BatonServer
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

    init(records: Int, timeStamps: Int? = nil) async throws {
        temp = try TemporaryDirectory()
        dir = temp.path + "/shared"
        var quiet = Logger(label: "test.server")
        quiet.logLevel = .critical
        server = try await ReferenceServer.start(.init(token: "e2e-token"), logger: quiet)
        client = RESTClient(baseURL: server.url, token: "e2e-token")
        if records > 0 { try await client.adminSeed(type: "Account", count: records, timeStamps: timeStamps) }
    }

    /// Starts `baton participant` with a sync down of every Account.
    @discardableResult
    func start(
        _ name: String, role: String, lifecycle: String, batchSize: Int = 500, extra: [String] = []
    ) throws -> BatonProcess {
        let process = try BatonProcess(
            [
                "participant", "--dir", dir, "--name", name, "--role", role, "--server", server.url,
                "--lifecycle", lifecycle,
                "--sync-down", "accounts:accounts:SELECT Id, Name, Number__c FROM Account", "--batch-size",
                String(batchSize),
            ] + extra, environment: ["BATON_TOKEN": "e2e-token"])
        processes[name] = process
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

    /// The participant's JSON-lines log.
    func log(_ name: String) -> [JSONObject] {
        let text = (try? String(contentsOfFile: dir + "/logs/\(name).jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONObject(parsingObject: String($0)) }
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
    func finish() async throws {
        for process in processes.values where process.isRunning { process.send(SIGTERM) }
        for (name, process) in processes {
            let result = try await process.wait(timeout: .seconds(60))
            #expect(
                !result.stderr.contains("SQLITE_BUSY") && !result.stderr.contains("database is locked"),
                "\(name): \(result.stderr)")
        }
        await server.stop()
    }
}
