import BatonREST
import BatonStore
import BatonSync
import Testing

/// Mobile Sync 7.1's `SyncUpTargetTests` (one record per call) and `BatchSyncUpTests` (the same
/// scenarios in batches of 2), ported scenario for scenario: the SDK's test helpers
/// (`createAccountsOnServer`, `makeSomeLocalChanges`, `createAccountsLocally`, `trySyncUp`,
/// `checkDbStateFlags`, `checkServer`) are the functions below.
@Suite("Mobile Sync 7.1's sync up tests", .timeLimit(.minutes(5)))
struct MobileSyncUpPortTests {
    static let fields = ["Name", "Description"]

    /// `createAccountsOnServer:10`: id → {Name, Description}.
    func createAccountsOnServer(_ f: SyncFixture, _ count: Int) async throws -> [String: JSONObject] {
        var idToFields: [String: JSONObject] = [:]
        for _ in 0..<count {
            let name = Self.accountName()
            let fields: JSONObject = ["Name": .string(name), "Description": .string("Description_\(name)")]
            idToFields[try await f.client.create(type: "Account", fields: fields)] = fields
        }
        return idToFields
    }

    static func accountName() -> String {
        "SyncManagerTestCase_Account_\(String(format: "%08d", Int.random(in: 0..<100_000_000)))"
    }

    /// `trySyncDown:` for `ids`: `SELECT Id, Name, Description, LastModifiedDate FROM Account WHERE Id IN (…)`.
    func trySyncDown(_ f: SyncFixture, _ ids: [String], _ mode: MergeMode) async throws {
        let list = ids.sorted().map { "'\($0)'" }.joined(separator: ", ")
        let sync = try await f.manager.syncDown(
            target: try f.soqlTarget(
                "SELECT Id, Name, Description, LastModifiedDate FROM Account WHERE Id IN (\(list))"),
            options: SyncOptions(mergeMode: mode), soupName: "accounts")
        let done = try #require(await f.manager.waitForSync(id: sync.id))
        #expect(done.status == .done && done.totalSize == ids.count)
    }

    /// `makeSomeLocalChanges`: the first and third ids (sorted) get `_updated` on Name and
    /// Description; returns their new fields.
    func makeSomeLocalChanges(_ f: SyncFixture, _ ids: [String]) async throws -> [String: JSONObject] {
        let chosen = [ids.sorted()[0], ids.sorted()[2]]
        var updated: [String: JSONObject] = [:]
        try await f.unfenced.write { transaction in
            for entry in try transaction.query(.all, in: "accounts") {
                guard let id = entry.record["Id"]?.stringValue, chosen.contains(id) else { continue }
                var record = entry.record
                for field in Self.fields {
                    record[field] = .string((record[field]?.stringValue ?? "") + "_updated")
                }
                try transaction.upsert(
                    LocalFlags.markUpdated(record), into: "accounts", entryId: entry.entryId)
            }
        }
        for (id, record) in try f.local() where chosen.contains(id) {
            updated[id] = ["Name": record["Name"] ?? .null, "Description": record["Description"] ?? .null]
        }
        return updated
    }

    /// `createAccountsLocally:`: `local_…` ids, locally created.
    func createAccountsLocally(_ f: SyncFixture, _ names: [String]) throws {
        try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        for name in names {
            try f.unfenced.upsert(
                LocalFlags.markCreated([
                    "Id": .string("local_\(String(format: "%08d", Int.random(in: 0..<100_000_000)))"),
                    "Name": .string(name), "Description": .string("Description_\(name)"),
                ]), into: "accounts")
        }
    }

    /// `trySyncUp:`: runs a sync up of the accounts soup with options fieldlist [Name,
    /// Description] and checks Mobile Sync's status sequence.
    func trySyncUp(
        _ f: SyncFixture, _ changes: Int, mode: MergeMode, batchSize: Int, createFieldlist: [String]? = nil,
        updateFieldlist: [String]? = nil
    ) async throws {
        let log = UpdateLog()
        let target = try RESTSyncUpTarget(
            client: f.client, objectType: "Account", batchSize: batchSize, createFieldlist: createFieldlist,
            updateFieldlist: updateFieldlist)
        let sync = try await f.manager.syncUp(
            target: target, options: SyncOptions(mergeMode: mode, fieldlist: Self.fields),
            soupName: "accounts",
            onUpdate: log.block)
        #expect(sync.status == .new || sync.status == .running)
        _ = try #require(await f.manager.waitForSync(id: sync.id))
        var expected = ["running 0/-1"]
        if changes > 0 { expected += (0..<changes).map { "running \($0 * 100 / changes)/\(changes)" } }
        expected.append("done 100/\(changes)")
        #expect(ListenerContractTests.render(log.all) == expected)
    }

    /// `getIdToFieldsByName`: local records whose Name is among `names`, by id.
    func localByName(_ f: SyncFixture, _ names: [String]) throws -> [String: JSONObject] {
        try f.local().filter { names.contains($0.value["Name"]?.stringValue ?? "") }
    }

    /// `checkDbStateFlags`.
    func checkDbStateFlags(
        _ f: SyncFixture, _ ids: some Collection<String>, created: Bool, updated: Bool, deleted: Bool
    ) throws {
        let local = try f.local()
        for id in ids {
            let record = try #require(local[id], "\(id)")
            #expect(LocalFlags.isDirty(record) == (created || updated || deleted))
            #expect(LocalFlags.isCreated(record) == created)
            #expect((record[LocalFlags.locallyUpdated]?.boolValue ?? false) == updated)
            #expect(LocalFlags.isDeleted(record) == deleted)
            #expect(id.hasPrefix("local_") == created)
            if !LocalFlags.isDirty(record) { #expect((record[LocalFlags.lastError] ?? .null) == .null) }
        }
    }

    /// `checkServer:`: each id's Name and Description on the server (null: not set).
    func checkServer(_ f: SyncFixture, _ expected: [String: JSONObject]) async throws {
        for (id, fields) in expected {
            let record = try #require(try await f.client.get(type: "Account", id: id), "\(id)")
            for field in Self.fields {
                #expect((record[field] ?? .null) == (fields[field] ?? .null), "\(id).\(field)")
            }
        }
    }

    @Test("testSyncUpWithUpdateFieldList: an update sends only the update field list", arguments: [1, 2])
    func updateFieldList(batchSize: Int) async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try await trySyncDown(f, Array(idToFields.keys), .overwrite)
            let updated = try await makeSomeLocalChanges(f, Array(idToFields.keys))
            try await trySyncUp(f, 2, mode: .overwrite, batchSize: batchSize, updateFieldlist: ["Name"])
            try checkDbStateFlags(f, updated.keys, created: false, updated: false, deleted: false)
            // Only Name was sent: the server keeps the original Description.
            var expected: [String: JSONObject] = [:]
            for (id, fields) in updated {
                expected[id] = [
                    "Name": fields["Name"] ?? .null, "Description": idToFields[id]?["Description"] ?? .null,
                ]
            }
            try await checkServer(f, expected)
        }
    }

    @Test("testSyncUpWithCreateFieldList: a create sends only the create field list", arguments: [1, 2])
    func createFieldList(batchSize: Int) async throws {
        try await withSyncFixture { f in
            let names = (0..<3).map { _ in Self.accountName() }
            try createAccountsLocally(f, names)
            try await trySyncUp(f, 3, mode: .overwrite, batchSize: batchSize, createFieldlist: ["Name"])
            let created = try localByName(f, names)
            #expect(created.count == 3)
            try checkDbStateFlags(f, created.keys, created: false, updated: false, deleted: false)
            try await checkServer(
                f, created.mapValues { ["Name": $0["Name"] ?? .null, "Description": .null] })
        }
    }

    @Test(
        "testSyncUpWithCreateAndUpdateFieldList: creates and updates each send their own list",
        arguments: [1, 2])
    func createAndUpdateFieldList(batchSize: Int) async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try await trySyncDown(f, Array(idToFields.keys), .overwrite)
            let updated = try await makeSomeLocalChanges(f, Array(idToFields.keys))
            let names = (0..<3).map { _ in Self.accountName() }
            try createAccountsLocally(f, names)
            try await trySyncUp(
                f, 5, mode: .overwrite, batchSize: batchSize, createFieldlist: ["Name"],
                updateFieldlist: ["Description"])
            let created = try localByName(f, names)
            #expect(created.count == 3)
            try checkDbStateFlags(f, created.keys, created: false, updated: false, deleted: false)
            var expected = created.mapValues { ["Name": $0["Name"] ?? .null, "Description": JSONValue.null] }
            for (id, fields) in updated {
                expected[id] = [
                    "Name": idToFields[id]?["Name"] ?? .null, "Description": fields["Description"] ?? .null,
                ]
            }
            #expect(expected.count == 5)
            try await checkServer(f, expected)
        }
    }

    @Test(
        "testSyncUpWithErrors: records the server refuses keep their flags and local ids, with Salesforce's message",
        arguments: [1, 2])
    func syncUpWithErrors(batchSize: Int) async throws {
        try await withSyncFixture { f in
            let nameTooLong = String(repeating: "x", count: 256)
            let goodNames = (0..<3).map { _ in Self.accountName() }
            let badNames = [nameTooLong, ""]
            try createAccountsLocally(f, goodNames)
            try createAccountsLocally(f, badNames)
            try await trySyncUp(f, 5, mode: .overwrite, batchSize: batchSize)
            let good = try localByName(f, goodNames)
            #expect(good.count == 3)
            try checkDbStateFlags(f, good.keys, created: false, updated: false, deleted: false)
            let bad = try localByName(f, badNames)
            #expect(bad.count == 2)
            try checkDbStateFlags(f, bad.keys, created: true, updated: false, deleted: false)
            for record in bad.values {
                let lastError = record[LocalFlags.lastError]?.stringValue ?? ""
                switch record["Name"]?.stringValue {
                case nameTooLong:
                    #expect(lastError.contains("Account Name: data value too large"), "\(lastError)")
                case "": #expect(lastError.contains("Required fields are missing: [Name]"), "\(lastError)")
                default: Issue.record("unexpected record \(record)")
                }
            }
            try await checkServer(
                f,
                good.mapValues { ["Name": $0["Name"] ?? .null, "Description": $0["Description"] ?? .null] })
        }
    }

    @Test(
        "testCustomSyncUpWithFetchModificationDateFailure: the sync goes on when the server's dates cannot be fetched"
    )
    func fetchModificationDateFailure() async throws {
        try await withSyncFixture { f in
            let idToFields = try await createAccountsOnServer(f, 10)
            try await trySyncDown(f, Array(idToFields.keys), .leaveIfChanged)
            let updated = try await makeSomeLocalChanges(f, Array(idToFields.keys))
            // The query for the server's dates fails on every attempt (the client tries 3 times).
            try await f.client.adminSetFaults(["failNext": 3])
            try await trySyncUp(f, 2, mode: .leaveIfChanged, batchSize: 200)
            // Nothing could be compared, so nothing was sent: the records stay dirty, saying why.
            try checkDbStateFlags(f, updated.keys, created: false, updated: true, deleted: false)
            for id in updated.keys {
                let error = try #require(try f.local()[id]?[LocalFlags.lastError]?.stringValue)
                #expect(error.contains("modification date could not be fetched"))
            }
            try await checkServer(f, updated.keys.reduce(into: [:]) { $0[$1] = idToFields[$1] })
            // Once the server answers, the next sync up compares and sends them.
            try await f.client.adminClearFaults()
            try await trySyncUp(f, 2, mode: .leaveIfChanged, batchSize: 200)
            try checkDbStateFlags(f, updated.keys, created: false, updated: false, deleted: false)
            try await checkServer(f, updated)
        }
    }

    @Test("BatchSyncUpTests testFactoryMethodWithDict and testAsDict: the field lists round-trip")
    func fieldListsRoundTrip() throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        let target = try RESTSyncUpTarget(
            client: client, objectType: "Account", batchSize: 12, createFieldlist: ["Name"],
            updateFieldlist: ["Name", "Description"])
        #expect(target.json["createFieldlist"] == ["Name"])
        #expect(target.json["updateFieldlist"] == ["Name", "Description"])
        let rebuilt = try RESTTargetFactory(client: client).syncUpTarget(from: target.json)
        #expect(rebuilt.createFieldlist == ["Name"])
        #expect(rebuilt.updateFieldlist == ["Name", "Description"])
        #expect(rebuilt.batchSize == 12)
        // testFactoryMethodWithDictWithOptionalFields: no lists given, none set.
        let plain = try RESTTargetFactory(client: client).syncUpTarget(from: [
            "type": "rest", "objectType": "Account",
        ])
        #expect(plain.createFieldlist == nil && plain.updateFieldlist == nil)
        #expect(plain.json["createFieldlist"] == nil)
        #expect(throws: SyncError.self) {
            try RESTTargetFactory(client: client).syncUpTarget(
                from: ["type": "rest", "objectType": "Account", "createFieldlist": "Name"])
        }
    }
}
