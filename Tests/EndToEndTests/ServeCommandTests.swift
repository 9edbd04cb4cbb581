import BatonJSON
import BatonREST
import BatonTestSupport
import Foundation
import Testing

@Suite("baton serve")
struct ServeCommandTests {
    @Test("--json prints the URL and token; the token opens the API, its absence gets 401")
    func serveJSON() async throws {
        let server = try await BatonProcess(["serve", "--json", "--seed", "Account=1000"])
        defer { server.sendDetached(SIGTERM) }
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

    @Test(
        "an over-long query or request line gets a Salesforce-shaped error from baton serve, never an empty 400"
    )
    func overLongRequests() async throws {
        let server = try await BatonProcess(["serve", "--json"])
        defer { server.sendDetached(SIGTERM) }
        try await server.waitForLine(containing: "\"url\"")
        let info = try JSONValue(parsing: String(try #require(server.stdout.split(separator: "\n").first)))
        let client = RESTClient(
            baseURL: try #require(info.value(atPath: "url")?.stringValue),
            token: try #require(info.value(atPath: "token")?.stringValue), retry: .none)
        func refusal(_ path: String) async -> RESTError? {
            do {
                _ = try await client.send(.GET, path, idempotent: false)
                return nil
            } catch {
                return error as? RESTError
            }
        }
        let megabyte = String(repeating: "a", count: 1024 * 1024)
        let query = await refusal(
            "/services/data/v60.0/query?q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27\(megabyte)%27")
        #expect(query?.status == 400 && query?.errorCode == "MALFORMED_QUERY")
        #expect(query?.message.contains("longer than 100000 characters") == true)
        // Past what the decoder reads: 431, with a body saying why (an empty one reads HTTP_431).
        let line = await refusal(
            "/services/data/v60.0/query?q=" + String(repeating: "a", count: 3 * 1024 * 1024))
        #expect(line?.status == 431 && line?.errorCode == "REQUEST_HEADER_FIELDS_TOO_LARGE")
    }

    @Test("a bad --seed is a usage error, not a crash")
    func badSeed() async throws {
        let result = try await BatonProcess.run(["serve", "--seed", "Account"])
        #expect(result.status != 0)
        #expect(!result.signaled)
        #expect(result.stderr.contains("TYPE=COUNT"))
    }

    @Test("--schema adds types and fields; an unreadable or invalid file is a clear error")
    func schemaFile() async throws {
        let temp = try TemporaryDirectory()
        let file = temp.path + "/schema.json"
        try #"{"objects": [{"name": "Invoice__c", "fields": [{"name": "Amount__c", "type": "currency"}]}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let server = try await BatonProcess(["serve", "--json", "--schema", file])
        defer { server.sendDetached(SIGTERM) }
        try await server.waitForLine(containing: "\"url\"")
        let info = try JSONValue(parsing: String(try #require(server.stdout.split(separator: "\n").first)))
        let client = RESTClient(
            baseURL: try #require(info.value(atPath: "url")?.stringValue),
            token: try #require(info.value(atPath: "token")?.stringValue), retry: .none)
        _ = try await client.create(type: "Invoice__c", fields: ["Name": "INV-1", "Amount__c": 9.5])
        let page = try await client.queryFirstPage("SELECT Name, Amount__c FROM Invoice__c")
        #expect(page.records.first?["Amount__c"] == 9.5)
        await #expect {
            try await client.queryFirstPage("SELECT Tax__c FROM Invoice__c")
        } throws: { ($0 as? RESTError)?.errorCode == "INVALID_FIELD" }

        let missing = try await BatonProcess.run(["serve", "--schema", temp.path + "/none.json"])
        #expect(missing.status != 0 && !missing.signaled)
        #expect(missing.stderr.contains("--schema: cannot read the schema file"))
        try #"{"objects": [{"name": "X", "fields": [{"name": "Y", "type": "blob"}]}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let invalid = try await BatonProcess.run(["serve", "--schema", file])
        #expect(invalid.status != 0 && !invalid.signaled)
        #expect(invalid.stderr.contains("unknown type 'blob'"))
    }

    @Test("--child-page-size pages a parent's children at that size; below 1 is a usage error")
    func childPageSize() async throws {
        let server = try await BatonProcess(["serve", "--json", "--child-page-size", "2"])
        defer { server.sendDetached(SIGTERM) }
        try await server.waitForLine(containing: "\"url\"")
        let info = try JSONValue(parsing: String(try #require(server.stdout.split(separator: "\n").first)))
        let client = RESTClient(
            baseURL: try #require(info.value(atPath: "url")?.stringValue),
            token: try #require(info.value(atPath: "token")?.stringValue), retry: .none)
        let account = try await client.create(type: "Account", fields: ["Name": "Parent"])
        try await client.adminSeed(type: "Contact", count: 5, fields: ["AccountId": .string(account)])
        let page = try await client.queryFirstPage("SELECT Id, (SELECT Id FROM Contacts) FROM Account")
        let nested = try #require(page.records.first?["Contacts"])
        #expect(nested.value(atPath: "records")?.arrayValue?.count == 2)
        #expect(nested.value(atPath: "totalSize") == 5)
        #expect(nested.value(atPath: "done") == false)
        let rest = try await client.queryNextPage(
            try #require(nested.value(atPath: "nextRecordsUrl")?.stringValue))
        #expect(rest.records.count == 2)
        #expect(!rest.done)

        let zero = try await BatonProcess.run(["serve", "--child-page-size", "0"])
        #expect(zero.status != 0 && !zero.signaled)
        #expect(zero.stderr.contains("--child-page-size must be at least 1"))
    }
}
