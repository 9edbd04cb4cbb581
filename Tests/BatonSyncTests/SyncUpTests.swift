import BatonLocking
import BatonREST
import BatonStore
import BatonSync
import Logging
import Testing

@Suite("Sync up", .timeLimit(.minutes(5)))
struct SyncUpTests {
    /// Syncs the server's accounts down, then returns the local entries by server id.
    func fetchDown(_ f: SyncFixture) async throws -> [String: SoupEntry] {
        let sync = try await f.manager.syncDown(
            target: try f.soqlTarget(), soupName: "accounts", name: "down")
        _ = await f.manager.waitForSync(id: sync.id)
        var byId: [String: SoupEntry] = [:]
        for entry in try f.store.query(.all, in: "accounts") {
            if let id = entry.record["Id"]?.stringValue { byId[id] = entry }
        }
        return byId
    }

    func mark(_ f: SyncFixture, _ entry: SoupEntry, _ change: @escaping @Sendable (JSONObject) -> JSONObject)
        async throws
    {
        let entryId = entry.entryId
        try await f.unfenced.write { transaction in
            guard let current = try transaction.entry(entryId, in: "accounts") else { return }
            try transaction.upsert(change(current.record), into: "accounts", entryId: entryId)
        }
    }

    func runUp(_ f: SyncFixture, _ options: SyncOptions = SyncOptions(), batchSize: Int = 200) async throws
        -> SyncState
    {
        let sync = try await f.manager.syncUp(
            target: try f.upTarget(batchSize: batchSize), options: options, soupName: "accounts")
        return try #require(await f.manager.waitForSync(id: sync.id))
    }

    @Test("created, updated and deleted records reach the server and come back clean")
    func basicSyncUp() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 3)
            let local = try await fetchDown(f)
            try await mark(f, local[ids[0]]!) {
                var r = $0; r["Name"] = "renamed"; return LocalFlags.markUpdated(r)
            }
            try await mark(f, local[ids[1]]!) { LocalFlags.markDeleted($0) }
            try f.unfenced.registerSoup("accounts", indexSpecs: [])
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "brand new"]), into: "accounts")

            let state = try await runUp(f, batchSize: 1)
            #expect(state.status == .done)
            #expect(state.progress == 100)
            #expect(state.totalSize == 3)

            let server = try await f.client.adminRecords(type: "Account")
            #expect(server.count == 3)  // 3 seeded - 1 deleted + 1 created
            #expect(server.contains { $0["Name"] == "renamed" })
            #expect(!server.contains { $0["Id"]?.stringValue == ids[1] })
            let created = try #require(server.first { $0["Name"] == "brand new" })
            #expect(created["BatonExternalId__c"]?.stringValue != nil)

            let after = try f.store.query(.all, in: "accounts")
            #expect(after.count == 3)
            #expect(after.allSatisfy { !LocalFlags.isDirty($0.record) })
            #expect(after.contains { $0.record["Id"] == created["Id"] })
            #expect(try await f.store.read { try $0.dirtyEntryIds(in: "accounts") }.isEmpty)
        }
    }

    @Test("created-then-deleted records make no server call")
    func createdThenDeleted() async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            try f.unfenced.upsert(
                LocalFlags.markDeleted(LocalFlags.markCreated(["Name": "ephemeral"])), into: "accounts")
            try await f.client.adminResetStats()
            let requestsBefore = try await f.client.adminStats().value(atPath: "requests")?.intValue ?? 0
            let state = try await runUp(f)
            #expect(state.status == .done)
            let requestsAfter = try await f.client.adminStats().value(atPath: "requests")?.intValue ?? 0
            #expect(requestsAfter - requestsBefore == 1)  // only this stats call
            #expect(try f.store.count(in: "accounts") == 0)
            #expect(try await f.client.adminRecords(type: "Account").isEmpty)
        }
    }

    @Test(
        "a record deleted on the server is recreated under overwrite, left with an error under leaveIfChanged",
        arguments: [MergeMode.overwrite, .leaveIfChanged])
    func remoteDeleted(mode: MergeMode) async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 1)
            let local = try await fetchDown(f)
            try await mark(f, local[ids[0]]!) {
                var r = $0; r["Name"] = "edited"; return LocalFlags.markUpdated(r)
            }
            try await f.client.adminDelete(type: "Account", ids: ids)
            let state = try await runUp(f, SyncOptions(mergeMode: mode))
            #expect(state.status == .done)
            let server = try await f.client.adminRecords(type: "Account")
            let record = try #require(try f.store.query(.all, in: "accounts").first?.record)
            if mode == .overwrite {
                #expect(server.count == 1)
                #expect(server.first?["Name"] == "edited")
                #expect(record["Id"] == server.first?["Id"])
                #expect(!LocalFlags.isDirty(record))
            } else {
                #expect(server.isEmpty)
                #expect(LocalFlags.isDirty(record))
                #expect(record[LocalFlags.lastError]?.stringValue?.contains("deleted") == true)
            }
        }
    }

    @Test(
        "a lookup naming an account deleted on the server is a refusal: nothing created, the contact stays dirty with its error",
        arguments: [MergeMode.overwrite, .leaveIfChanged])
    func lookupRefusal(mode: MergeMode) async throws {
        try await withSyncFixture { f in
            let kept = try await f.client.create(type: "Account", fields: ["Name": "Kept"])
            let gone = try await f.client.create(type: "Account", fields: ["Name": "Gone"])
            let contact = try await f.client.create(
                type: "Contact", fields: ["LastName": "Ann", "AccountId": .string(kept)])
            let down = try await f.manager.syncDown(
                target: try f.soqlTarget("SELECT Id, LastName, AccountId, LastModifiedDate FROM Contact"),
                soupName: "contacts")
            #expect(await f.manager.waitForSync(id: down.id)?.status == .done)
            try await f.client.delete(type: "Account", id: gone)
            // The contact moved to the deleted account.
            try await f.unfenced.write { transaction in
                let entry = try #require(
                    try transaction.entry(where: "Id", equals: .string(contact), in: "contacts"))
                var record = entry.record
                record["AccountId"] = .string(gone)
                try transaction.upsert(
                    LocalFlags.markUpdated(record), into: "contacts", entryId: entry.entryId)
            }
            // Creates leave the lookup out, as an app's create list may: a contact created again
            // in place of the refused update would be accepted.
            let target = try RESTSyncUpTarget(
                client: f.client, objectType: "Contact", createFieldlist: ["LastName"],
                updateFieldlist: ["LastName", "AccountId"])
            for _ in 0..<2 {
                let sync = try await f.manager.syncUp(
                    target: target, options: SyncOptions(mergeMode: mode), soupName: "contacts")
                #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
                let server = try await f.client.adminRecords(type: "Contact")
                #expect(server.count == 1)
                #expect(
                    server.first?["Id"] == .string(contact) && server.first?["AccountId"] == .string(kept))
                let local = try f.store.query(.all, in: "contacts").map(\.record)
                #expect(local.count == 1)
                let moved = try #require(local.first)
                #expect(moved["Id"] == .string(contact) && moved["AccountId"] == .string(gone))
                #expect(LocalFlags.isDirty(moved) && !LocalFlags.isCreated(moved))
                #expect(moved[LocalFlags.locallyUpdated] == true)
                let error = moved[LocalFlags.lastError]?.stringValue ?? ""
                #expect(error == "ENTITY_IS_DELETED on AccountId: entity is deleted")
            }
        }
    }

    @Test("leaveIfChanged skips records changed on the server since they were fetched")
    func leaveIfChangedSkips() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 2)
            let local = try await fetchDown(f)
            for id in ids {
                try await mark(f, local[id]!) {
                    var r = $0; r["Name"] = "local"; return LocalFlags.markUpdated(r)
                }
            }
            try await f.client.adminTouch(type: "Account", ids: [ids[0]], fields: ["Name": "server"])
            let state = try await runUp(f, SyncOptions(mergeMode: .leaveIfChanged))
            #expect(state.status == .done)
            let server = Dictionary(
                uniqueKeysWithValues: try await f.client.adminRecords(type: "Account").map {
                    ($0["Id"]!.stringValue!, $0)
                })
            #expect(server[ids[0]]?["Name"] == "server")
            #expect(server[ids[1]]?["Name"] == "local")
            let after = try f.local()
            #expect(after[ids[0]].map(LocalFlags.isDirty) == true)
            #expect(after[ids[1]].map(LocalFlags.isDirty) == false)
        }
    }

    @Test("a record the server refuses keeps its flags and gets __last_error__; the sync ends done")
    func serverErrorPerRecord() async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "fine"]), into: "accounts")
            try f.unfenced.upsert(
                LocalFlags.markCreated(["Name": "bad", "bad field!": 1]), into: "accounts")
            let state = try await runUp(f)
            #expect(state.status == .done)
            let records = try f.store.query(.all, in: "accounts").map(\.record)
            let bad = try #require(records.first { $0["Name"] == "bad" })
            #expect(LocalFlags.isDirty(bad) && LocalFlags.isCreated(bad))
            #expect(bad[LocalFlags.lastError]?.stringValue?.contains("INVALID_FIELD") == true)
            let fine = try #require(records.first { $0["Name"] == "fine" })
            #expect(!LocalFlags.isDirty(fine))
            #expect(try await f.client.adminRecords(type: "Account").count == 1)
        }
    }

    @Test(
        "the records the server refused are counted in the sync's state, stored, heard by the listener, and counted again on the next run"
    )
    func refusedCounted() async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "fine"]), into: "accounts")
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "bad", "bad field!": 1]), into: "accounts")
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": ""]), into: "accounts")
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "also fine"]), into: "accounts")
            let updates = UpdateLog()
            // Batches of one: the count grows over the run's progress updates and is stored.
            let sync = try await f.manager.syncUp(
                target: try f.upTarget(batchSize: 1), soupName: "accounts", onUpdate: updates.block)
            let done = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(done.status == .done)
            #expect(done.refusedCount == 2)
            #expect(try SyncState.byId(sync.id, store: f.store)?.refusedCount == 2)
            let heard = await updates.first { $0.status == .done }
            #expect(heard?.refusedCount == 2)
            let counts = updates.all.map(\.refusedCount)
            #expect(counts == counts.sorted(), "the count only grows within a run: \(counts)")
            #expect(try await f.client.adminRecords(type: "Account").count == 2)

            // One refused record repaired: the next run counts only what it refused.
            try await f.unfenced.write { transaction in
                let entry = try #require(
                    try transaction.query(.all, in: "accounts").first { $0.record["Name"] == "" })
                var record = entry.record
                record["Name"] = "repaired"
                try transaction.upsert(record, into: "accounts", entryId: entry.entryId)
            }
            _ = try await f.manager.reSync(id: sync.id)
            let again = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(again.status == .done)
            #expect(again.refusedCount == 1)
            #expect(try await f.client.adminRecords(type: "Account").count == 3)
        }
    }

    @Test(
        "the server dropping the response after committing a create, then a retry, leaves one server record")
    func droppedAfterCommit() async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            try f.unfenced.upsert(LocalFlags.markCreated(["Name": "once"]), into: "accounts")
            try await f.client.adminSetFaults(["dropAfterCommitNext": 1])
            let state = try await runUp(f)
            #expect(state.status == .done)
            let server = try await f.client.adminRecords(type: "Account")
            #expect(server.count == 1)
            let faults = try await f.client.adminStats().value(atPath: "faultsInjected.dropAfterCommit")
            #expect(faults == 1)
            let record = try #require(try f.store.query(.all, in: "accounts").first?.record)
            #expect(record["Id"] == server.first?["Id"])
            #expect(!LocalFlags.isDirty(record))
        }
    }

    @Test("a fieldlist limits what is sent")
    func fieldlist() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 1)
            let local = try await fetchDown(f)
            try await mark(f, local[ids[0]]!) {
                var r = $0; r["Name"] = "sent"; r["Secret__c"] = "kept local";
                return LocalFlags.markUpdated(r)
            }
            _ = try await runUp(f, SyncOptions(mergeMode: .overwrite, fieldlist: ["Name"]))
            let server = try #require(try await f.client.get(type: "Account", id: ids[0]))
            #expect(server["Name"] == "sent")
            #expect(server["Secret__c"] == nil)
        }
    }

    @Test(
        "a create the server committed, fetched by a sync down before its answer, stays one entry",
        arguments: [false, true])
    func createFetchedBeforeAcknowledged(editedMeanwhile: Bool) async throws {
        try await withSyncFixture { f in
            try f.unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            let created = try f.unfenced.upsert(
                LocalFlags.markCreated(["Name": "new", "BatonExternalId__c": "ext-1"]), into: "accounts")
            // The first attempt committed on the server, but its answer never came back.
            _ = try await f.client.upsert(
                type: "Account", field: "BatonExternalId__c", value: "ext-1", fields: ["Name": "new"])
            let fetched = try #require(try await fetchDown(f).values.first)
            #expect(fetched.entryId != created.entryId)
            if editedMeanwhile {
                try await mark(f, fetched) {
                    var r = $0; r["Name"] = "edited after the fetch"; return LocalFlags.markUpdated(r)
                }
            }

            #expect(try await runUp(f).status == .done)
            var entries = try f.store.query(.all, in: "accounts")
            #expect(entries.map(\.entryId) == [created.entryId])
            let serverId = try #require(try await f.client.adminRecords(type: "Account").first?["Id"])
            #expect(entries.first?.record["Id"] == serverId)
            #expect(
                entries.first?.record["Name"]?.stringValue
                    == (editedMeanwhile ? "edited after the fetch" : "new"))
            // The copy's server fields come along (it was fetched after the create committed).
            #expect(entries.first?.record["LastModifiedDate"] != nil)

            #expect(try await runUp(f).status == .done)
            entries = try f.store.query(.all, in: "accounts")
            #expect(entries.count == 1)
            #expect(entries.allSatisfy { !LocalFlags.isDirty($0.record) })
            let server = try await f.client.adminRecords(type: "Account")
            #expect(server.count == 1)
            #expect(
                server.first?["Name"]?.stringValue == (editedMeanwhile ? "edited after the fetch" : "new"))
        }
    }
}

/// A sync up target that runs `meanwhile` before its first send: a local edit that lands while
/// the change is on its way to the server.
struct EditWhileSending: SyncUpTarget {
    let inner: any SyncUpTarget
    let meanwhile: @Sendable () async throws -> Void

    var json: JSONObject { inner.json }
    var idFieldName: String { inner.idFieldName }
    var modificationDateFieldName: String { inner.modificationDateFieldName }
    var externalIdFieldName: String { inner.externalIdFieldName }
    var batchSize: Int { inner.batchSize }

    func send(_ changes: [LocalChange]) async throws -> [SyncUpOutcome] {
        try await meanwhile()
        return try await inner.send(changes)
    }

    func fetchModificationTimeStamps(ids: [String]) async throws -> [String: Int64] {
        try await inner.fetchModificationTimeStamps(ids: ids)
    }

    func modificationTimeStamp(of record: JSONObject) -> Int64? { inner.modificationTimeStamp(of: record) }
}

struct EditWhileSendingFactory: SyncTargetFactory {
    let inner: RESTTargetFactory
    let meanwhile: @Sendable () async throws -> Void

    func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget {
        try inner.syncDownTarget(from: json)
    }

    func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget {
        EditWhileSending(inner: try inner.syncUpTarget(from: json), meanwhile: meanwhile)
    }
}

@Suite("Sync up: local edits while a change is on its way", .timeLimit(.minutes(5)))
struct SyncUpRaceTests {
    @Test("an edit made while its record's create or update is being sent stays dirty and goes up next time")
    func editWhileSending() async throws {
        try await withSyncFixture { f in
            _ = try await f.client.adminSeed(type: "Account", count: 1)
            let down = try await f.manager.syncDown(
                target: try f.soqlTarget(), soupName: "accounts", name: "down")
            _ = await f.manager.waitForSync(id: down.id)
            let existing = try #require(f.store.query(.all, in: "accounts").first)
            let store = f.store
            let unfenced = f.unfenced
            try await unfenced.write { transaction in
                var renamed = existing.record
                renamed["Name"] = "renamed"
                try transaction.upsert(
                    LocalFlags.markUpdated(renamed), into: "accounts", entryId: existing.entryId)
            }
            let created = try await unfenced.write { transaction in
                try transaction.upsert(LocalFlags.markCreated(["Name": "brand new"]), into: "accounts")
            }

            // The first send finds both records edited again locally after they were read.
            let once = Locked(true)
            let factory = EditWhileSendingFactory(inner: RESTTargetFactory(client: f.client)) {
                guard
                    once.withLock({ first in
                        defer { first = false }; return first
                    })
                else { return }
                try await unfenced.write { transaction in
                    for (entryId, name) in [
                        (existing.entryId, "renamed again"), (created.entryId, "brand new, edited"),
                    ] {
                        var record = try #require(try transaction.entry(entryId, in: "accounts")).record
                        record["Name"] = .string(name)
                        try transaction.upsert(
                            LocalFlags.markUpdated(record), into: "accounts", entryId: entryId)
                    }
                }
            }
            var logger = Logger(label: "test.sync")
            logger.logLevel = .warning
            let manager = SyncManager(unfenced: unfenced, targetFactory: factory, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await manager.run() }
                defer { group.cancelAll() }
                func syncUp() async throws -> SyncState? {
                    let sync = try await manager.syncUp(
                        target: try f.upTarget(), options: SyncOptions(), soupName: "accounts")
                    return await manager.waitForSync(id: sync.id)
                }

                #expect(try await syncUp()?.status == .done)
                // The server has what was sent; the edits are still local and dirty.
                var server = try await f.client.adminRecords(type: "Account").compactMap {
                    $0["Name"]?.stringValue
                }
                #expect(server.sorted() == ["brand new", "renamed"])
                let kept = try #require(
                    try await store.read { try $0.entry(created.entryId, in: "accounts") }
                ).record
                #expect(kept["Name"] == "brand new, edited")
                #expect(kept["Id"]?.stringValue != nil, "the create was acknowledged: it has its server id")
                #expect(LocalFlags.isDirty(kept) && LocalFlags.isUpdated(kept) && !LocalFlags.isCreated(kept))
                let renamed = try #require(
                    try await store.read { try $0.entry(existing.entryId, in: "accounts") }
                ).record
                #expect(renamed["Name"] == "renamed again" && LocalFlags.isDirty(renamed))

                // The next sync up sends the edits, as updates: no second create.
                #expect(try await syncUp()?.status == .done)
                server = try await f.client.adminRecords(type: "Account").compactMap {
                    $0["Name"]?.stringValue
                }
                #expect(server.sorted() == ["brand new, edited", "renamed again"])
                #expect(try store.query(.all, in: "accounts").allSatisfy { !LocalFlags.isDirty($0.record) })
            }
        }
    }
}
