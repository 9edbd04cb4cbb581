import BatonLocking
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging
import Testing

/// Mobile Sync 7.1's `ParentChildrenSyncTests` for sync down, ported scenario for scenario:
/// Accounts with their Contacts, master-detail, filtered to the test's accounts.
@Suite("Mobile Sync 7.1's parent-children sync down tests", .timeLimit(.minutes(5)))
struct ParentChildrenSyncDownTests {
    let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")

    /// The custom target of the SDK's query tests (`Parent`/`Children`, lookup).
    func customTarget(defaults: Bool) throws -> ParentChildrenSyncDownTarget {
        try ParentChildrenSyncDownTarget(
            client: client,
            parentInfo: defaults
                ? ParentInfo(sobjectType: "Parent", soupName: "parentsSoup")
                : ParentInfo(
                    sobjectType: "Parent", soupName: "parentsSoup", idFieldName: "ParentId",
                    modificationDateFieldName: "ParentModifiedDate"),
            parentFieldlist: ["ParentName", "Title"], parentSoqlFilter: "School = 'MIT'",
            childrenInfo: defaults
                ? ChildrenInfo(
                    sobjectType: "Child", sobjectTypePlural: "Children", soupName: "childrenSoup",
                    parentIdFieldName: "parentId")
                : ChildrenInfo(
                    sobjectType: "Child", sobjectTypePlural: "Children", soupName: "childrenSoup",
                    parentIdFieldName: "ChildParentId", idFieldName: "ChildId",
                    modificationDateFieldName: "ChildLastModifiedDate"),
            childrenFieldlist: ["ChildName", "School"], relationshipType: .lookup)
    }

    @Test(
        "testGetQuery and testGetQueryWithMaxTimeStamp: Mobile Sync's query, with Baton's lower bound and order"
    )
    func queries() throws {
        #expect(
            try customTarget(defaults: false).query(.everything)
                == "select ParentName, Title, ParentId, ParentModifiedDate, (select ChildName, School, ChildId, ChildLastModifiedDate from Children) from Parent where School = 'MIT' order by ParentId"
        )
        #expect(
            try customTarget(defaults: true).query(.everything)
                == "select ParentName, Title, Id, LastModifiedDate, (select ChildName, School, Id, LastModifiedDate from Children) from Parent where School = 'MIT' order by Id"
        )
        let stamp: Int64 = 1_700_000_000_000
        let date = "2023-11-14T22:13:20.000+0000"
        // A run after the first: parents and children stamped at or after the lower bound.
        #expect(
            try customTarget(defaults: false).query(FetchStart(modifiedSince: stamp))
                == "select ParentName, Title, ParentId, ParentModifiedDate, (select ChildName, School, ChildId, ChildLastModifiedDate from Children where ChildLastModifiedDate >= \(date)) from Parent where ParentModifiedDate >= \(date) and (School = 'MIT') order by ParentId"
        )
        // A run resuming after a stop: the same bound, after the last parent saved.
        #expect(
            try customTarget(defaults: true).query(FetchStart(modifiedSince: stamp, afterId: "001A"))
                == "select ParentName, Title, Id, LastModifiedDate, (select ChildName, School, Id, LastModifiedDate from Children where LastModifiedDate >= \(date)) from Parent where LastModifiedDate >= \(date) and Id > '001A' and (School = 'MIT') order by Id"
        )
        // testGetSoqlForRemoteIds, with the children's ids Baton cleans too.
        #expect(
            try customTarget(defaults: false).remoteIdsQuery
                == "select ParentId, (select ChildId from Children) from Parent where School = 'MIT'")
        // The JSON round-trips through the factory.
        let target = try customTarget(defaults: false)
        #expect(try RESTTargetFactory(client: client).syncDownTarget(from: target.json).json == target.json)
        #expect(target.json["relationshipType"] == "LOOKUP")
    }

    // MARK: - Against the reference server

    struct Tree {
        var accounts: [String: JSONObject] = [:]
        /// Account id → contact id → fields.
        var contacts: [String: [String: JSONObject]] = [:]
        var accountIds: [String] { accounts.keys.sorted() }
    }

    static func name(_ type: String) -> String {
        "SyncManagerTestCase_\(type)_\(String(format: "%08d", Int.random(in: 0..<100_000_000)))"
    }

    /// `createAccountsAndContactsOnServer(n, m)`.
    func createAccountsAndContactsOnServer(_ f: SyncFixture, _ accounts: Int, _ contacts: Int) async throws
        -> Tree
    {
        var tree = Tree()
        for _ in 0..<accounts {
            let name = Self.name("Account")
            let fields: JSONObject = ["Name": .string(name), "Description": .string("Description_\(name)")]
            let id = try await f.client.create(type: "Account", fields: fields)
            tree.accounts[id] = fields
            tree.contacts[id] = [:]
            for _ in 0..<contacts {
                let contact: JSONObject = [
                    "LastName": .string(Self.name("Contact")), "AccountId": .string(id),
                ]
                tree.contacts[id]![try await f.client.create(type: "Contact", fields: contact)] = contact
            }
        }
        // Records the org has had for a while: a resync's overlap does not reach them.
        try await f.age("Account")
        try await f.age("Contact")
        return tree
    }

    func accountContactsTarget(_ f: SyncFixture, _ ids: [String]) throws -> ParentChildrenSyncDownTarget {
        try ParentChildrenSyncDownTarget(
            client: f.client, parentInfo: ParentInfo(sobjectType: "Account", soupName: "accounts"),
            parentFieldlist: ["Id", "Name", "Description"],
            parentSoqlFilter: "Id IN (\(ids.map { "'\($0)'" }.joined(separator: ", ")))",
            childrenInfo: ChildrenInfo(
                sobjectType: "Contact", sobjectTypePlural: "Contacts", soupName: "contacts",
                parentIdFieldName: "AccountId"),
            childrenFieldlist: ["LastName", "AccountId"], relationshipType: .masterDetail)
    }

    func checkDb(_ f: SyncFixture, _ soup: String, _ expected: [String: JSONObject]) throws {
        let local = try f.local(soup)
        for (id, fields) in expected {
            let record = try #require(local[id], "\(soup) \(id)")
            for (key, value) in fields { #expect(record[key] == value, "\(soup) \(id).\(key)") }
        }
    }

    @Test("testSyncDown: accounts land in accounts, their contacts in contacts, linked by AccountId")
    func syncDown() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 3)
            let sync = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, tree.accountIds), totalSize: 4)
            try checkDb(f, "accounts", tree.accounts)
            for (accountId, contacts) in tree.contacts {
                try checkDb(
                    f, "contacts", contacts.mapValues { $0.merging(["AccountId": .string(accountId)]) { $1 } }
                )
            }
            let contacts = try f.store.query(.all, in: "contacts").map(\.record)
            #expect(contacts.count == 12)
            #expect(contacts.allSatisfy { $0[LocalFlags.syncId] == .int(sync.id) && !LocalFlags.isDirty($0) })
            // The accounts hold no nested contacts.
            #expect(try f.local("accounts").values.allSatisfy { $0["Contacts"] == nil })
        }
    }

    @Test("testSyncDownNoChildren: accounts without contacts")
    func syncDownNoChildren() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 0)
            try await f.trySyncDown(.overwrite, try accountContactsTarget(f, tree.accountIds), totalSize: 4)
            try checkDb(f, "accounts", tree.accounts)
            #expect(try f.store.query(.all, in: "contacts").isEmpty)
        }
    }

    /// Marks a local record updated with `_updated` on its text fields.
    func updateLocally(_ f: SyncFixture, _ soup: String, _ id: String) async throws -> JSONObject {
        try await f.unfenced.write { transaction -> JSONObject in
            let entry = try #require(try transaction.entry(where: "Id", equals: .string(id), in: soup))
            var record = entry.record
            for key in ["Name", "Description", "LastName"] where record[key]?.stringValue != nil {
                record[key] = .string(record[key]!.stringValue! + "_updated")
            }
            record = LocalFlags.markUpdated(record)
            try transaction.upsert(record, into: soup, entryId: entry.entryId)
            return record
        }
    }

    @Test(
        "testSyncDownWithoutOverwrite: a tree with a dirty parent or child is left whole; overwrite then wins"
    )
    func syncDownWithoutOverwrite() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 3)
            let target = try accountContactsTarget(f, tree.accountIds)
            try await f.trySyncDown(.overwrite, target, totalSize: 4)
            let (dirtyParent, dirtyChildren) = (tree.accountIds[0], tree.accountIds[1])
            let updatedAccount = try await updateLocally(f, "accounts", dirtyParent)
            var updatedContacts: [String: JSONObject] = [:]
            for accountId in [dirtyParent, dirtyChildren] {
                let ids = tree.contacts[accountId]!.keys.sorted()
                for id in [ids[0], ids[2]] {
                    updatedContacts[id] = try await updateLocally(f, "contacts", id)
                }
            }
            // The server renames every contact, so a refreshed tree would show it.
            func serverName(_ accountId: String, _ id: String) -> JSONValue {
                .string(tree.contacts[accountId]![id]!["LastName"]!.stringValue! + "_server")
            }
            for (accountId, contacts) in tree.contacts {
                for id in contacts.keys {
                    try await f.client.update(
                        type: "Contact", id: id, fields: ["LastName": serverName(accountId, id)])
                }
            }
            try await f.trySyncDown(.leaveIfChanged, target, totalSize: 4)
            let accounts = try f.local("accounts")
            #expect(accounts[dirtyParent]?["Name"] == updatedAccount["Name"])
            #expect(accounts[dirtyParent].map(LocalFlags.isDirty) == true)
            #expect(accounts[dirtyChildren].map(LocalFlags.isDirty) == false)
            var contacts = try f.local("contacts")
            for (id, record) in updatedContacts {
                #expect(contacts[id]?["LastName"] == record["LastName"])
                #expect(contacts[id].map(LocalFlags.isDirty) == true)
            }
            // The two dirty trees were left whole: their clean contacts were not refreshed either.
            for accountId in [dirtyParent, dirtyChildren] {
                for id in tree.contacts[accountId]!.keys where updatedContacts[id] == nil {
                    #expect(contacts[id]?["LastName"] == tree.contacts[accountId]![id]!["LastName"])
                }
            }
            for accountId in tree.accountIds[2...] {
                for id in tree.contacts[accountId]!.keys {
                    #expect(contacts[id]?["LastName"] == serverName(accountId, id))
                    #expect(contacts[id].map(LocalFlags.isDirty) == false)
                }
            }
            try await f.trySyncDown(.overwrite, target, totalSize: 4)
            try checkDb(f, "accounts", tree.accounts)
            #expect(try f.local("accounts").values.allSatisfy { !LocalFlags.isDirty($0) })
            contacts = try f.local("contacts")
            for (accountId, ids) in tree.contacts {
                for id in ids.keys {
                    #expect(contacts[id]?["LastName"] == serverName(accountId, id))
                    #expect(contacts[id].map(LocalFlags.isDirty) == false)
                }
            }
        }
    }

    @Test("testReSyncWithUpdatedParents: a resync fetches the changed parents")
    func reSyncWithUpdatedParents() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 3)
            let sync = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, tree.accountIds), totalSize: 4)
            #expect(sync.maxTimeStamp > 0)
            var updated: [String: JSONObject] = [:]
            for id in [tree.accountIds[0], tree.accountIds[2]] {
                let fields: JSONObject = [
                    "Name": .string(tree.accounts[id]!["Name"]!.stringValue! + "_remotely_updated")
                ]
                try await f.client.update(type: "Account", id: id, fields: fields)
                updated[id] = fields
            }
            let log = UpdateLog()
            _ = try await f.manager.reSync(id: sync.id, onUpdate: log.block)
            let again = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(ListenerContractTests.render(log.all) == ["running 0/-1", "running 0/2", "done 100/2"])
            try checkDb(f, "accounts", updated)
            #expect(again.maxTimeStamp > sync.maxTimeStamp)
        }
    }

    @Test(
        "testReSyncWithUpdatedChildren: children changed under a changed parent come; under an unchanged one, not yet"
    )
    func reSyncWithUpdatedChildren() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 3)
            let sync = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, tree.accountIds), totalSize: 4)
            let (changedParent, unchangedParent) = (tree.accountIds[0], tree.accountIds[1])
            try await f.client.update(type: "Account", id: changedParent, fields: ["Name": "changed parent"])
            var changedContacts: [String: JSONObject] = [:]
            for accountId in [changedParent, unchangedParent] {
                let ids = tree.contacts[accountId]!.keys.sorted()
                for id in [ids[0], ids[2]] {
                    let fields: JSONObject = ["LastName": .string("\(id)_remotely_updated")]
                    try await f.client.update(type: "Contact", id: id, fields: fields)
                    if accountId == changedParent { changedContacts[id] = fields }
                }
            }
            let log = UpdateLog()
            _ = try await f.manager.reSync(id: sync.id, onUpdate: log.block)
            let again = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(ListenerContractTests.render(log.all) == ["running 0/-1", "running 0/1", "done 100/1"])
            try checkDb(f, "accounts", [changedParent: ["Name": "changed parent"]])
            try checkDb(f, "contacts", changedContacts)
            try checkDb(f, "contacts", tree.contacts[unchangedParent]!)
            #expect(again.maxTimeStamp > sync.maxTimeStamp)
        }
    }

    @Test("testCleanResyncGhostsForParentChildrenTarget: a deleted account goes with its contacts")
    func cleanGhosts() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 4, 3)
            let sync = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, tree.accountIds), totalSize: 4)
            let deleted = tree.accountIds[0]
            try await f.client.delete(type: "Account", id: deleted)
            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 1)
            #expect(try f.local("accounts")[deleted] == nil)
            let contacts = try f.local("contacts")
            for id in tree.contacts[deleted]!.keys { #expect(contacts[id] == nil) }
            for accountId in tree.accountIds[1...] { try checkDb(f, "contacts", tree.contacts[accountId]!) }
            try checkDb(f, "accounts", tree.accounts.filter { $0.key != deleted })
        }
    }

    @Test("testCleanResyncGhostsForParentChildrenWithMultipleSyncs: each sync cleans only its own records")
    func cleanGhostsWithMultipleSyncs() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 6, 3)
            let ids = tree.accountIds
            let syncA = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, Array(ids[0...2])), totalSize: 3)
            let syncB = try await f.trySyncDown(
                .overwrite, try accountContactsTarget(f, Array(ids[2...5])), totalSize: 4)
            #expect(try f.local("accounts")[ids[2]]?[LocalFlags.syncId] == .int(syncB.id))
            for index in [0, 2, 5] { try await f.client.delete(type: "Account", id: ids[index]) }

            _ = try await f.manager.cleanResyncGhosts(id: syncA.id)
            var accounts = try f.local("accounts")
            #expect(accounts[ids[0]] == nil)
            for index in 1...5 { #expect(accounts[ids[index]] != nil, "account \(index)") }
            var contacts = try f.local("contacts")
            for id in tree.contacts[ids[0]]!.keys { #expect(contacts[id] == nil) }
            for index in 1...5 { for id in tree.contacts[ids[index]]!.keys { #expect(contacts[id] != nil) } }

            _ = try await f.manager.cleanResyncGhosts(id: syncB.id)
            accounts = try f.local("accounts")
            contacts = try f.local("contacts")
            for index in [0, 2, 5] {
                #expect(accounts[ids[index]] == nil, "account \(index)")
                for id in tree.contacts[ids[index]]!.keys { #expect(contacts[id] == nil) }
            }
            for index in [1, 3, 4] {
                #expect(accounts[ids[index]] != nil, "account \(index)")
                try checkDb(f, "contacts", tree.contacts[ids[index]]!)
            }
        }
    }

    @Test("a stop between pages of trees, then a restart: every parent and child once, nothing lost")
    func stopBetweenTrees() async throws {
        try await withSyncFixture { f in
            let tree = try await createAccountsAndContactsOnServer(f, 6, 2)
            // The accounts change after their contacts: every contact is older than the stamp
            // the stopped run resumes from, and must still come with its account.
            _ = try await f.client.adminTouch(
                type: "Account", ids: tree.accountIds, fields: ["Description": "touched"])
            let base = try accountContactsTarget(f, tree.accountIds)
            var json = base.json
            json["batchSize"] = 2
            let target = try RESTTargetFactory(client: f.client).syncDownTarget(from: json)
            let stopping = Locked(true)
            let (stopped, stopDone) = AsyncStream.makeStream(of: Void.self)
            var logger = Logger(label: "test.sync")
            logger.logLevel = .warning
            let holder = Locked<SyncManager?>(nil)
            let factory = ChangesWhilePagingFactory(
                inner: RESTTargetFactory(client: f.client, store: f.store)
            ) { page in
                // Stop while page 3 is asked for: pages 1 and 2 (four trees) are saved.
                guard page == 3, stopping.withLock({ $0 }), let manager = holder.withLock({ $0 }) else {
                    return
                }
                stopping.withLock { $0 = false }
                await manager.stop()
                stopDone.finish()
                try Task.checkCancellation()
            }
            let manager = SyncManager(unfenced: f.unfenced, targetFactory: factory, logger: logger)
            holder.withLock { $0 = manager }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await manager.run() }
                defer { group.cancelAll() }
                let sync = try await manager.syncDown(target: target, soupName: "accounts")
                for await _ in stopped {}
                await manager.waitUntilStopped()
                #expect(try await manager.getSyncStatus(id: sync.id)?.status == .stopped)
                #expect(try f.store.query(.all, in: "accounts").count == 4)
                #expect(try f.store.query(.all, in: "contacts").count == 8)
                _ = try await manager.restart(restartStoppedSyncs: true)
                #expect(await manager.waitForSync(id: sync.id)?.status == .done)
            }
            let accounts = try f.store.query(.all, in: "accounts").map(\.record)
            let contacts = try f.store.query(.all, in: "contacts").map(\.record)
            #expect(
                accounts.count == 6
                    && Set(accounts.compactMap { $0["Id"]?.stringValue }) == Set(tree.accountIds))
            #expect(contacts.count == 12)
            for (accountId, ids) in tree.contacts {
                #expect(
                    Set(
                        contacts.filter { $0["AccountId"]?.stringValue == accountId }.compactMap {
                            $0["Id"]?.stringValue
                        }) == Set(ids.keys))
            }
        }
    }
}
