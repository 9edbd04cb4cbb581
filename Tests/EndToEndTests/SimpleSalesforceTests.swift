import BatonServer
import BatonStore
import Foundation
import Logging
import Testing

/// A real third-party client against the reference server: simple-salesforce (PyPI), running
/// `Tests/Clients/simple_salesforce_check.py` (search, quick search, describe, recent items,
/// an aggregate query, a refused create). The package is installed once into
/// `.build/python-clients` (pip, from PyPI) when it is not there yet.
@Suite("A real client: simple-salesforce", .timeLimit(.minutes(5)))
struct SimpleSalesforceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `command` (through `/usr/bin/env`) with `PYTHONPATH` set to the client packages.
    func run(_ command: [String], packages: String) async throws -> ProcessResult {
        try await BatonProcess(command, environment: ["PYTHONPATH": packages], executable: "/usr/bin/env")
            .wait(timeout: .seconds(240))
    }

    @Test(
        "search, quick_search, describe, metadata, an aggregate query and a refusal, as Salesforce answers them"
    )
    func simpleSalesforce() async throws {
        let packages = Self.root.appendingPathComponent(".build/python-clients").path
        if try await run(["python3", "-c", "import simple_salesforce"], packages: packages).status != 0 {
            let install = try await run(
                [
                    "python3", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target",
                    packages,
                    "simple-salesforce>=1.12,<2",
                ], packages: packages)
            try #require(install.status == 0, "pip could not install simple-salesforce: \(install.stderr)")
        }
        var quiet = Logger(label: "test.server")
        quiet.logLevel = .critical
        let server = try await ReferenceServer.start(.init(token: "py-token"), logger: quiet)
        let result: ProcessResult
        do {
            result = try await run(
                [
                    "python3",
                    Self.root.appendingPathComponent("Tests/Clients/simple_salesforce_check.py").path,
                    server.url, "py-token",
                ],
                packages: packages)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let seen = try JSONValue(parsing: result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(seen.value(atPath: "search") == 1)
        #expect(seen.value(atPath: "quick_search") == 1)
        #expect(seen.value(atPath: "recent_items") == 2)
        #expect(seen.value(atPath: "refused") == "REQUIRED_FIELD_MISSING")
    }
}
