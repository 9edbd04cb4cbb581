import BatonLocking
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Testing

/// Mobile Sync 7.1's `SyncManagerTests` for the refresh, MRU and SOSL targets and its metadata
/// and layout tests, ported scenario for scenario against the reference server. `trySyncDown`
/// checks the listener's updates as the SDK's helper does.
@Suite("Mobile Sync 7.1's refresh, MRU, SOSL, metadata and layout tests", .timeLimit(.minutes(5)))
struct MobileSyncTargetsPortTests {
    /// `createAccountsOnServer:10`: id → {Name, Description}.
    func createAccountsOnServer(_ f: SyncFixture, _ count: Int) async throws -> [String: JSONObject] {
        var idToFields: [String: JSONObject] = [:]
        for _ in 0..<count {
            let name =
                "SyncManagerTestCase_Account_\(String(format: "%08d", Int.random(in: 0..<100_000_000)))"
            let fields: JSONObject = ["Name": .string(name), "Description": .string("Description_\(name)")]
            idToFields[try await f.client.create(type: "Account", fields: fields)] = fields
        }
        // Records the org has had for a while: a resync's overlap does not reach them.
        try await f.age("Account")
        return idToFields
    }

    func createAccountsSoup(_ f: SyncFixture) throws {
        try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
    }

    /// `checkDb:`: the soup holds each id with the expected fields.
    func checkDb(_ f: SyncFixture, _ idToFields: [String: JSONObject]) throws {
        let local = try f.local()
        for (id, fields) in idToFields {
            let record = try #require(local[id], "\(id)")
            for (key, value) in fields { #expect(record[key] == value, "\(id).\(key)") }
        }
    }

    func refreshTarget(
        _ f: SyncFixture, fields: [String] = ["Id", "Name", "Description"], perSoql: Int = 500
    )
        throws -> RefreshSyncDownTarget
    {
        try RefreshSyncDownTarget(
            client: f.client, store: f.store, soupName: "accounts", objectType: "Account", fieldlist: fields,
            countIdsPerSoql: perSoql)
    }

    /// The soup holds bare `{Id}` records of the server's accounts.
    func seedIdsLocally(_ f: SyncFixture, _ ids: some Sequence<String>) throws {
        try createAccountsSoup(f)
        for id in ids { try f.unfenced.upsert(["Id": .string(id)], into: "accounts") }
    }

    @Test("testRefreshSyncDown and testRefreshSyncDownWithMultipleRoundTrips", arguments: [(500, 1), (2, 5)])
    func refreshSyncDown(perSoql: Int, fetches: Int) async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try seedIdsLocally(f, idToFields.keys)
            try await f.trySyncDown(
                .overwrite, try refreshTarget(f, perSoql: perSoql), totalSize: 10, numberFetches: fetches)
            try checkDb(f, idToFields)
        }
    }

    @Test("a record the app adds to the soup mid-run shifts no batch: every id is refreshed")
    func refreshWithInsertMidRun() async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try seedIdsLocally(f, idToFields.keys)
            for id in idToFields.keys {
                try await f.client.update(type: "Account", id: id, fields: ["Name": "refreshed"])
            }
            let inserted = Locked(false)
            try await ChangesWhilePagingTests().withManager(
                f,
                beforePage: { _, page in
                    // Before the second batch: an entry whose id sorts before every other.
                    guard page == 2, !inserted.withLock({ $0 }) else { return }
                    inserted.withLock { $0 = true }
                    try f.unfenced.upsert(["Id": "000000000000000AAA"], into: "accounts")
                }
            ) { manager in
                let sync = try await manager.syncDown(
                    target: try refreshTarget(f, perSoql: 2), soupName: "accounts", name: "refresh")
                #expect(await manager.waitForSync(id: sync.id)?.status == .done)
                #expect(inserted.withLock { $0 })
                let local = try f.local()
                #expect(idToFields.keys.allSatisfy { local[$0]?["Name"] == "refreshed" })
            }
        }
    }

    @Test("testRefreshReSyncWithMultipleRoundTrips: a resync fetches only what changed, page by page")
    func refreshReSync() async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try seedIdsLocally(f, idToFields.keys)
            let target = try refreshTarget(
                f, fields: ["Id", "Name", "Description", "LastModifiedDate"], perSoql: 1)
            let sync = try await f.trySyncDown(.overwrite, target, totalSize: 10, numberFetches: 10)
            #expect(sync.maxTimeStamp > 0)
            try checkDb(f, idToFields)
            // makeSomeRemoteChanges: the first and third ids, sorted.
            let changed = Array(
                idToFields.keys.sorted().enumerated().filter { [0, 2].contains($0.offset) }.map(\.element))
            var updated: [String: JSONObject] = [:]
            for id in changed {
                let fields: JSONObject = [
                    "Name": .string("\(idToFields[id]!["Name"]!.stringValue!)_remotely_updated"),
                    "Description": .string(
                        "\(idToFields[id]!["Description"]!.stringValue!)_remotely_updated"),
                ]
                try await f.client.update(type: "Account", id: id, fields: fields)
                updated[id] = fields
            }
            let log = UpdateLog()
            _ = try await f.manager.reSync(id: sync.id, onUpdate: log.block)
            let again = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(
                ListenerContractTests.render(log.all)
                    == ["running 0/-1"]
                    + [0, 10, 10, 20, 20, 20, 20, 20, 20, 20, 20].map { "running \($0)/10" }
                    + ["done 100/10"])
            try checkDb(f, updated)
            #expect(again.maxTimeStamp > sync.maxTimeStamp)
        }
    }

    @Test("testCleanResyncGhostsForRefreshTarget: a record deleted on the server goes; the others stay")
    func refreshGhosts() async throws {
        try await withSyncFixture { f in
            var idToFields = try await createAccountsOnServer(f, 10)
            try seedIdsLocally(f, idToFields.keys)
            let sync = try await f.trySyncDown(
                .overwrite, try refreshTarget(f), totalSize: 10, numberFetches: 1)
            let deleted = idToFields.keys.sorted()[0]
            try await f.client.delete(type: "Account", id: deleted)
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1)
            idToFields[deleted] = nil
            try checkDb(f, idToFields)
            #expect(try f.local()[deleted] == nil)
            #expect(try f.local().count == 9)
        }
    }

    @Test("testCleanResyncGhostsForMRUTarget: the recent records come down; one deleted on the server goes")
    func mruGhosts() async throws {
        try await withSyncFixture { f in
            try createAccountsSoup(f)
            let existing =
                try await f.client.send(
                    .GET, "\(f.client.apiPath)/sobjects/Account", idempotent: true
                ).body.value(atPath: "recentItems")?.arrayValue?.compactMap {
                    $0.value(atPath: "Id")?.stringValue
                } ?? []
            let created = Array(try await createAccountsOnServer(f, 3).keys)
            let accountIds = created + existing
            let target = try MruSyncDownTarget(
                client: f.client, objectType: "Account", fieldlist: ["Id", "Name", "Description"])
            let sync = try await f.trySyncDown(
                .leaveIfChanged, target, totalSize: accountIds.count, numberFetches: 1)
            #expect(Set(try f.local().keys).isSuperset(of: accountIds))
            try await f.client.delete(type: "Account", id: accountIds[0])
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1)
            #expect(try f.local()[accountIds[0]] == nil)
            #expect(try f.local().count == accountIds.count - 1)
        }
    }

    @Test("testCleanResyncGhostsForSOSLTarget: the search's records come down; one gone from the search goes")
    func soslGhosts() async throws {
        try await withSyncFixture { f in
            try createAccountsSoup(f)
            let (id, fields) = try #require(try await createAccountsOnServer(f, 1).first)
            let name = try #require(fields["Name"]?.stringValue)
            let sosl = "find {\(name)} in NAME FIELDS returning  Account(Id, Name, Description)"
            let sync = try await f.trySyncDown(
                .leaveIfChanged, try SoslSyncDownTarget(client: f.client, query: sosl), totalSize: 1,
                numberFetches: 1)
            try checkDb(f, [id: fields])
            try await f.client.delete(type: "Account", id: id)
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1)
            #expect(try f.local()[id] == nil)
        }
    }

    @Test("testSyncDownForMetadataTarget, fetched twice: one record, Account's describe")
    func metadata() async throws {
        try await withSyncFixture { f in
            try createAccountsSoup(f)
            let target = try MetadataSyncDownTarget(client: f.client, objectType: "Account")
            for _ in 0..<2 { try await f.trySyncDown(.overwrite, target, totalSize: 1, numberFetches: 1) }
            let rows = try f.store.query(.all, in: "accounts").map(\.record)
            #expect(rows.count == 1)
            let metadata = try #require(rows.first)
            #expect(metadata["Id"] == "Account" && metadata["name"] == "Account")
            #expect(metadata["keyPrefix"] == "001" && metadata["label"] == "Account")
            for flag in ["compactLayoutable", "createable", "searchable"] {
                #expect(metadata[flag] == true, "\(flag)")
            }
            #expect(
                metadata["childRelationships"]?.arrayValue != nil && metadata["fields"]?.arrayValue != nil)
            #expect(metadata["urls"]?.objectValue != nil)
        }
    }

    @Test("testSyncDownForLayoutTarget, fetched twice: one record, Account's compact layout")
    func layout() async throws {
        try await withSyncFixture { f in
            try createAccountsSoup(f)
            let target = try LayoutSyncDownTarget(
                client: f.client, objectType: "Account", layoutType: "Compact")
            let sync = try await f.trySyncDown(.overwrite, target, totalSize: 1, numberFetches: 1)
            try await f.trySyncDown(.overwrite, target, totalSize: 1, numberFetches: 1)
            let rows = try f.store.query(.all, in: "accounts").map(\.record)
            #expect(rows.count == 1)
            let layout = try #require(rows.first)
            #expect(layout["Id"] == "Account-Compact" && layout["layoutType"] == "Compact")
            let items = JSONValue.object(layout).value(atPath: "sections")?.arrayValue?.first?
                .value(atPath: "layoutRows")?.arrayValue?.first?.value(atPath: "layoutItems")?.arrayValue
            #expect(items?.isEmpty == false)
            // Clean resync ghosts keeps the one record the sync wrote.
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 0)
            #expect(try f.store.query(.all, in: "accounts").count == 1)
        }
    }

    @Test("the factory rebuilds every target type from its JSON, and names what is missing")
    func factoryRoundTrips() throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        let factory = RESTTargetFactory(client: client)
        let targets: [any SyncDownTarget] = [
            try SoslSyncDownTarget(client: client, query: "FIND {x} RETURNING Account(Id)"),
            try MruSyncDownTarget(client: client, objectType: "Account", fieldlist: ["Id", "Name"]),
            try RefreshSyncDownTarget(
                client: client, store: nil, soupName: "accounts", objectType: "Account", fieldlist: ["Id"],
                countIdsPerSoql: 7),
            try MetadataSyncDownTarget(client: client, objectType: "Account"),
            try LayoutSyncDownTarget(client: client, objectType: "Account", layoutType: "Compact"),
        ]
        for target in targets { #expect(try factory.syncDownTarget(from: target.json).json == target.json) }
        #expect(targets[2].json["coundIdsPerSoql"] == 7)  // Mobile Sync's spelling
        #expect(throws: SyncError.self) { try factory.syncDownTarget(from: ["type": "mru"]) }
        #expect(throws: SyncError.self) { try factory.syncDownTarget(from: ["type": "parentChildrenX"]) }
        #expect(throws: SyncError.self) {
            try MruSyncDownTarget(client: client, objectType: "Account", fieldlist: [])
        }
    }
}
