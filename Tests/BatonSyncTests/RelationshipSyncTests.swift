import BatonREST
import BatonStore
import BatonSync
import Testing

@Suite("Sync down of relationship queries", .timeLimit(.minutes(5)))
struct RelationshipSyncTests {
    @Test("a parent field and a child subquery are stored nested, as the server answers them")
    func nestedRecordsAreStored() async throws {
        try await withSyncFixture { f in
            let owner = try await f.client.create(type: "User", fields: ["Name": "Olga Owner"])
            let accounts = try await f.client.adminSeed(
                type: "Account", count: 3, fields: ["OwnerId": .string(owner)])
            _ = try await f.client.create(
                type: "Contact", fields: ["LastName": "Abe", "AccountId": .string(accounts[0])])
            try f.unfenced.registerSoup(
                "accounts",
                indexSpecs: [
                    IndexSpec(path: "Id", type: .string), IndexSpec(path: "Owner.Name", type: .string),
                ])
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(
                    "SELECT Id, Name, Owner.Name, (SELECT Id, LastName FROM Contacts) FROM Account",
                    batchSize: 2),
                soupName: "accounts", name: "nested")
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            let local = try f.local()
            #expect(local.count == 3)
            let first = try #require(local[accounts[0]])
            #expect(JSONValue.object(first).value(atPath: "Owner.Name") == "Olga Owner")
            #expect(JSONValue.object(first).value(atPath: "Owner.attributes.type") == "User")
            #expect(JSONValue.object(first).value(atPath: "Contacts.totalSize") == 1)
            #expect(
                JSONValue.object(first).value(atPath: "Contacts.records")?.arrayValue?.first?.value(
                    atPath: "LastName")
                    == "Abe")
            #expect(local[accounts[1]]?["Contacts"] == .null)

            // A local query on the nested path's index finds them.
            let byOwner = try f.store.query(
                SoupQuery(where: [.exact("Owner.Name", "Olga Owner")]), in: "accounts")
            #expect(byOwner.count == 3)
        }
    }
}
