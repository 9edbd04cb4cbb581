import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import SOQL
import Testing

@Suite("Server routes and errors")
struct RouteTests {
    @Test("create, read, update and delete one record")
    func crud() async throws {
        try await withLiveServer { _, client in
            let id = try await client.create(
                type: "Account", fields: ["Name": "Acme", "Industry__c": "Energy"])
            #expect(id.count == 18)
            #expect(id.hasPrefix("001"))
            let fetched = try #require(try await client.get(type: "Account", id: id))
            #expect(fetched["Name"] == "Acme")
            let created = try #require(
                DateTimeLiteral.milliseconds(fetched["LastModifiedDate"]?.stringValue ?? ""))
            try await client.update(type: "Account", id: id, fields: ["Name": "Acme 2"])
            let updated = try #require(try await client.get(type: "Account", id: id))
            #expect(updated["Name"] == "Acme 2")
            #expect(updated["Industry__c"] == "Energy")
            // Salesforce's clock: whole seconds, so an update in the same second keeps the stamp.
            let modified = try #require(
                DateTimeLiteral.milliseconds(updated["LastModifiedDate"]?.stringValue ?? ""))
            #expect(modified >= created)
            #expect(created % 1000 == 0 && modified % 1000 == 0)
            try await client.delete(type: "Account", id: id)
            #expect(try await client.get(type: "Account", id: id) == nil)
            await #expect {
                try await client.delete(type: "Account", id: id)
            } throws: { ($0 as? RESTError)?.status == 404 }
        }
    }

    @Test("upserting twice on an external id makes one record")
    func upsertTwice() async throws {
        try await withLiveServer { _, client in
            let first = try await client.upsert(
                type: "Account", field: "Ext__c", value: "abc-1", fields: ["Name": "A"])
            let second = try await client.upsert(
                type: "Account", field: "Ext__c", value: "abc-1", fields: ["Name": "B"])
            #expect(first.created && !second.created)
            #expect(first.id == second.id)
            let page = try await client.queryFirstPage("SELECT Id, Name FROM Account WHERE Ext__c = 'abc-1'")
            #expect(page.totalSize == 1)
            #expect(page.records.first?["Name"] == "B")
        }
    }

    @Test("server-managed fields cannot be written")
    func managedFields() async throws {
        try await withLiveServer { _, client in
            for field in ["Id", "LastModifiedDate", "SystemModstamp"] {
                await #expect {
                    try await client.create(type: "Account", fields: [field: "x"])
                } throws: { error in
                    let error = error as? RESTError
                    return error?.status == 400 && error?.errorCode == "INVALID_FIELD_FOR_INSERT_UPDATE"
                }
            }
        }
    }

    /// Expects `soql` to be refused with a 400 `MALFORMED_QUERY` whose message contains `reason`.
    func expectMalformed(
        _ client: RESTClient, _ soql: String, saying reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await #expect(sourceLocation: sourceLocation) {
            try await client.queryFirstPage(soql)
        } throws: { error in
            let error = error as? RESTError
            return error?.status == 400 && error?.errorCode == "MALFORMED_QUERY"
                && error?.message.contains(reason) == true
        }
    }

    @Test("a malformed query is a MALFORMED_QUERY error naming the position")
    func malformedQuery() async throws {
        try await withLiveServer { _, client in
            await expectMalformed(client, "SELECT Id FROM", saying: "position")
        }
    }

    @Test("queries nested or longer than the limits are refused with a Salesforce-shaped error")
    func queryLimits() async throws {
        try await withLiveServer { _, client in
            let deep =
                "SELECT Id FROM Account WHERE " + String(repeating: "(", count: 40) + "Name = 'a'"
                + String(repeating: ")", count: 40)
            await expectMalformed(client, deep, saying: "nested deeper than 32")
            let long = "SELECT Id FROM Account WHERE Name = '" + String(repeating: "a", count: 100_001) + "'"
            await expectMalformed(client, long, saying: "longer than 100000 characters")
        }
    }

    /// The error `path` is answered with: its status, Salesforce error code (`HTTP_<status>` when
    /// the body is empty) and message.
    func refusal(_ client: RESTClient, _ path: String, headers: [(String, String)] = []) async -> RESTError? {
        do {
            _ = try await client.send(.GET, path, headers: headers, idempotent: false)
            return nil
        } catch {
            return error as? RESTError
        }
    }

    @Test("a 1 MB query or search is MALFORMED_QUERY or MALFORMED_SEARCH saying the limit, not an empty 400")
    func megabyteQuery() async throws {
        try await withLiveServer { _, client in
            let filler = String(repeating: "a", count: 1024 * 1024)
            // Percent-encoded by the client, and with a + for each space as curl sends it.
            await expectMalformed(
                client, "SELECT Id FROM Account WHERE Name = '\(filler)'",
                saying: "longer than 100000 characters")
            let query = await refusal(
                client, "/services/data/v60.0/query?q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27\(filler)%27")
            #expect(query?.status == 400 && query?.errorCode == "MALFORMED_QUERY")
            #expect(query?.message.contains("longer than 100000 characters") == true)
            let search = await refusal(client, "/services/data/v60.0/search?q=FIND+%7B\(filler)%7D")
            #expect(search?.status == 400 && search?.errorCode == "MALFORMED_SEARCH")
            #expect(search?.message.contains("longer than 100000 characters") == true)
        }
    }

    @Test("a request line or headers past the decoder's limit get 431 with a Salesforce-shaped body")
    func requestHeadTooLarge() async throws {
        try await withLiveServer { _, client in
            let filler = String(repeating: "a", count: 3 * 1024 * 1024)
            for (path, headers) in [
                ("/services/data/v60.0/query?q=\(filler)", []),
                ("/services/data/v60.0/query?q=SELECT+Id+FROM+Account", [("X-Filler", filler)]),
            ] {
                let error = await refusal(client, path, headers: headers)
                // An empty body would read as HTTP_431.
                #expect(error?.status == 431 && error?.errorCode == "REQUEST_HEADER_FIELDS_TOO_LARGE")
                #expect(error?.message.contains("100000 characters") == true)
            }
            // The server goes on answering.
            let page = try await client.queryFirstPage("SELECT Id FROM Account")
            #expect(page.totalSize == 0)
        }
    }

    @Test("requests without the token are refused with INVALID_SESSION_ID")
    func auth() async throws {
        try await withLiveServer { server, _ in
            let stranger = RESTClient(baseURL: server.url, token: "wrong", retry: .none)
            await #expect {
                try await stranger.queryFirstPage("SELECT Id FROM Account")
            } throws: { error in
                let error = error as? RESTError
                return error?.status == 401 && error?.errorCode == "INVALID_SESSION_ID"
            }
            await #expect { try await stranger.adminStats() } throws: { ($0 as? RESTError)?.status == 401 }
        }
    }

    @Test("composite create, update, upsert and delete, with and without allOrNone")
    func composite() async throws {
        try await withLiveServer { _, client in
            let created = try await client.compositeCreate(
                type: "Account", records: [["Name": "a"], ["Name": "b"]])
            #expect(created.allSatisfy { $0.success })
            let ids = created.compactMap(\.id)
            #expect(ids.count == 2)

            let updated = try await client.compositeUpdate(
                type: "Account",
                records: [["Id": .string(ids[0]), "Name": "a2"], ["Id": "001000000000zzzAAA", "Name": "x"]])
            #expect(updated.map(\.success) == [true, false])
            #expect(try await client.get(type: "Account", id: ids[0])?["Name"] == "a2")

            let rolledBack = try await client.compositeUpdate(
                type: "Account",
                records: [
                    ["Id": .string(ids[1]), "Name": "b2"], ["Id": "001000000000zzzAAA", "Name": "x"],
                ],
                allOrNone: true)
            #expect(rolledBack.allSatisfy { !$0.success })
            #expect(rolledBack.first?.errorCode == "ALL_OR_NONE_OPERATION_ROLLED_BACK")
            #expect(try await client.get(type: "Account", id: ids[1])?["Name"] == "b")

            let upserted = try await client.compositeUpsert(
                type: "Account", externalIdField: "Ext__c",
                records: [["Ext__c": "e1", "Name": "u"], ["Ext__c": "e1", "Name": "v"]])
            #expect(upserted.map(\.created) == [true, false])
            #expect(upserted[0].id == upserted[1].id)

            let deleted = try await client.compositeDelete(ids: ids + ["001000000000zzzAAA"])
            #expect(deleted.map(\.success) == [true, true, false])
            let stats = try await client.adminStats()
            #expect(stats.value(atPath: "records.Account") == 1)
        }
    }

    @Test("oversized bodies are refused with a Salesforce-shaped error")
    func oversizedBody() async throws {
        try await withLiveServer { _, client in
            let big = String(repeating: "x", count: 9 * 1024 * 1024)
            await #expect {
                try await client.create(type: "Account", fields: ["Name": .string(big)])
            } throws: { ($0 as? RESTError)?.status == 413 }
        }
    }
}
