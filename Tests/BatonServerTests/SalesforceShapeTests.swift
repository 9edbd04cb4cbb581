import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Testing

/// What the server answers, shaped as Salesforce answers it (issue 19's server items).
@Suite("Salesforce's answers")
struct SalesforceShapeTests {
    func errorCode(_ call: () async throws -> Void) async -> String? {
        do {
            try await call()
            return nil
        } catch let error as RESTError {
            return error.errorCode
        } catch {
            return "\(error)"
        }
    }

    @Test("every version v31.0-v62.0 is routed and listed; others are NOT_FOUND; URLs keep the version asked")
    func versions() async throws {
        try await withLiveServer { _, client in
            let listing =
                try await client.send(.GET, "/services/data/", idempotent: true).body.arrayValue ?? []
            #expect(listing.count == 32)
            #expect(listing.first?.value(atPath: "version") == "31.0")
            #expect(listing.first?.value(atPath: "label") == "Summer '14")
            #expect(
                listing.first { $0.value(atPath: "version") == "60.0" }?.value(atPath: "label")
                    == "Spring '24")
            #expect(listing.last?.value(atPath: "label") == "Winter '25")
            #expect(listing.last?.value(atPath: "url") == "/services/data/v62.0")
            _ = try await client.adminSeed(type: "Account", count: 5)
            var old = client
            old.apiPath = "/services/data/v45.0"
            let page = try await old.queryFirstPage("SELECT Id, Name FROM Account", batchSize: 2)
            #expect(page.nextRecordsUrl?.hasPrefix("/services/data/v45.0/query/") == true)
            let raw = try await old.send(
                .GET, "/services/data/v45.0/query?q=SELECT+Id+FROM+Account", idempotent: true
            ).body
            #expect(
                raw.value(atPath: "records")?.arrayValue?.first?.value(atPath: "attributes.url")?.stringValue?
                    .hasPrefix("/services/data/v45.0/sobjects/Account/") == true)
            for version in ["v30.0", "v63.0", "v60", "latest"] {
                var other = client
                other.apiPath = "/services/data/\(version)"
                let code = await errorCode { _ = try await other.queryFirstPage("SELECT Id FROM Account") }
                #expect(code == "NOT_FOUND", "\(version)")
            }
        }
    }

    @Test("the last page of a query can be fetched again; an expired locator is INVALID_QUERY_LOCATOR")
    func lastPageAgain() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 5)
            let first = try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 3)
            let next = try #require(first.nextRecordsUrl)
            let last = try await client.queryNextPage(next)
            #expect(last.done)
            let again = try await client.queryNextPage(next)
            #expect(again.records == last.records)
            #expect(again.records.count == 2)
        }
        let server = try await ReferenceServer.start(
            .init(token: "t", locatorLifetime: .zero), logger: quietLogger())
        let client = RESTClient(baseURL: server.url, token: "t", retry: .none)
        _ = try await client.adminSeed(type: "Account", count: 5)
        let first = try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 3)
        let code = await errorCode { _ = try await client.queryNextPage(first.nextRecordsUrl ?? "") }
        #expect(code == "INVALID_QUERY_LOCATOR")
        await server.stop()
    }

    @Test("NOT_FOUND for an id never there, ENTITY_IS_DELETED for one deleted")
    func notFoundVersusDeleted() async throws {
        try await withLiveServer { _, client in
            let id = try await client.create(type: "Account", fields: ["Name": "Gone soon"])
            let never = "001" + String(repeating: "0", count: 11) + "ZZZZ"
            #expect(await errorCode { try await client.delete(type: "Account", id: never) } == "NOT_FOUND")
            try await client.delete(type: "Account", id: id)
            #expect(
                await errorCode { try await client.delete(type: "Account", id: id) } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    try await client.update(type: "Account", id: id, fields: ["Name": "back?"])
                } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/\(id)", idempotent: true)
                } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/\(never)", idempotent: true)
                } == "NOT_FOUND")
        }
    }

    @Test("a record by external id, and ?fields= on a record GET")
    func externalIdAndFields() async throws {
        try await withLiveServer { _, client in
            let (id, _) = try await client.upsert(
                type: "Account", field: "Ext__c", value: "ext-1",
                fields: ["Name": "Acme", "Industry": "Energy"])
            let byExternal = try await client.send(
                .GET, "\(client.apiPath)/sobjects/Account/Ext__c/ext-1", idempotent: true
            ).body
            #expect(byExternal.value(atPath: "Id")?.stringValue == id)
            #expect(byExternal.value(atPath: "Name") == "Acme")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/Ext__c/nobody", idempotent: true)
                } == "NOT_FOUND")
            let some =
                try await client.send(
                    .GET, "\(client.apiPath)/sobjects/Account/\(id)?fields=name,Industry", idempotent: true
                ).body.objectValue ?? [:]
            #expect(Set(some.keys) == ["name", "Industry", "attributes"])
            #expect(some["name"] == "Acme")
        }
    }

    @Test("SELECT COUNT() answers the count in totalSize and no records; COUNT() with other items is refused")
    func count() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 7)
            let all = try await client.queryFirstPage("SELECT COUNT() FROM Account")
            #expect(all.totalSize == 7 && all.records.isEmpty && all.done)
            let some = try await client.queryFirstPage("SELECT count() FROM Account LIMIT 3")
            #expect(some.totalSize == 3)
            #expect(
                await errorCode { _ = try await client.queryFirstPage("SELECT COUNT(), Id FROM Account") }
                    == "MALFORMED_QUERY")
        }
    }
}
