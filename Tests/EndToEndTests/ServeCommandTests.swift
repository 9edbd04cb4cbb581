import BatonJSON
import BatonREST
import Foundation
import Testing

@Suite("baton serve")
struct ServeCommandTests {
    @Test("--json prints the URL and token; the token opens the API, its absence gets 401")
    func serveJSON() async throws {
        let server = try BatonProcess(["serve", "--json", "--seed", "Account=1000"])
        defer { server.send(SIGTERM) }
        try await server.waitForLine(containing: "\"url\"")
        let firstLine = try #require(server.stdout.split(separator: "\n").first)
        let info = try JSONValue(parsing: String(firstLine))
        let url = try #require(info.value(atPath: "url")?.stringValue)
        let token = try #require(info.value(atPath: "token")?.stringValue)
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(token.count >= 32)

        let client = RESTClient(baseURL: url, token: token, retry: .none)
        let page = try await client.queryFirstPage(
            "SELECT Id, Name FROM Account ORDER BY LastModifiedDate LIMIT 5")
        #expect(page.records.count == 5)
        #expect(page.totalSize == 5)

        let stranger = RESTClient(baseURL: url, token: "", retry: .none)
        await #expect {
            try await stranger.queryFirstPage("SELECT Id FROM Account")
        } throws: { ($0 as? RESTError)?.status == 401 }
    }

    @Test("a bad --seed is a usage error, not a crash")
    func badSeed() async throws {
        let result = try await BatonProcess.run(["serve", "--seed", "Account"])
        #expect(result.status != 0)
        #expect(!result.signaled)
        #expect(result.stderr.contains("TYPE=COUNT"))
    }
}
