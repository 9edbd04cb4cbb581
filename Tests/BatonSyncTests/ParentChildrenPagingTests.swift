import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Testing

/// A parent with more children than the server puts in its nested result: Salesforce (and the
/// reference server) pages them behind the nested result's own `nextRecordsUrl`. Every reader of
/// nested results follows it: the sync down stores every child, clean resync ghosts deletes none
/// the server still has, and the sync up's `leaveIfChanged` check sees every child's stamp.
@Suite("Parent-children syncs with children past the first nested page", .timeLimit(.minutes(5)))
struct ParentChildrenPagingTests {
    /// The server's child page size (nil: its default, 200), and children enough to span pages.
    static let sizes: [(Int?, Int)] = [(3, 10), (nil, 250)]

    /// Runs `body` against a server paging children at `childPageSize` (nil: the default).
    func withFixture(childPageSize: Int?, _ body: @Sendable (SyncFixture) async throws -> Void)
        async throws
    {
        try await withSyncFixture(
            configure: { if let childPageSize { $0.childPageSize = childPageSize } }, body)
    }

    /// An account on the server with `count` contacts under it: their ids.
    func family(_ f: SyncFixture, contacts count: Int) async throws -> (account: String, contacts: [String]) {
        let account = try await f.client.create(
            type: "Account", fields: ["Name": .string("Family of \(count)")])
        let contacts = try await f.client.adminSeed(
            type: "Contact", count: count, fields: ["LastName": "Seeded", "AccountId": .string(account)])
        return (account, contacts)
    }

    /// These accounts with their contacts, master-detail, into `accounts` and `contacts` (or other
    /// soups).
    func target(
        _ f: SyncFixture, _ accounts: [String], soups: (String, String) = ("accounts", "contacts")
    ) throws -> ParentChildrenSyncDownTarget {
        try ParentChildrenSyncDownTarget(
            client: f.client, parentInfo: ParentInfo(sobjectType: "Account", soupName: soups.0),
            parentFieldlist: ["Id", "Name"],
            parentSoqlFilter: "Id IN (\(accounts.map { "'\($0)'" }.joined(separator: ", ")))",
            childrenInfo: ChildrenInfo(
                sobjectType: "Contact", sobjectTypePlural: "Contacts", soupName: soups.1,
                parentIdFieldName: "AccountId"),
            childrenFieldlist: ["LastName", "AccountId"], relationshipType: .masterDetail)
    }

    /// The local contacts: contact id → account id.
    func localContacts(_ f: SyncFixture, _ soup: String = "contacts") throws -> [String: String] {
        var contacts: [String: String] = [:]
        for record in try f.store.query(.all, in: soup).map(\.record) {
            contacts[record["Id"]?.stringValue ?? ""] = record["AccountId"]?.stringValue ?? ""
        }
        return contacts
    }

    /// What each contact's account is on the server, for these families.
    static func expected(_ families: [(account: String, contacts: [String])]) -> [String: String] {
        var contacts: [String: String] = [:]
        for family in families { for id in family.contacts { contacts[id] = family.account } }
        return contacts
    }

    /// The latency of the requests before the one a stop test holds: time enough to raise it
    /// for that one before it is sent.
    static let leadLatency: JSONValue = 500

    /// Holds the request that follows request `count`: once `count` has arrived (held for
    /// ``leadLatency``), the latency goes up to 4 s, and this returns when the next request has
    /// arrived too (the one after the call that raised it).
    func holdRequest(after count: Int, _ f: SyncFixture) async throws {
        await f.server.server.waitForRequests(count)
        try await f.client.adminSetFaults(["latencyMs": 4000])
        await f.server.server.waitForRequests(count + 2)
    }

    /// Contacts the server has delivered in query pages of their own (a nested result's further
    /// pages; those nested in a parent's page do not count). A page whose client hung up before
    /// its answer was written does not count.
    func contactsServed(_ f: SyncFixture) async throws -> Int {
        Int(try await f.client.adminStats().value(atPath: "recordsServed.Contact")?.intValue ?? 0)
    }

    @Test("a sync down stores every child of a parent whose children span nested pages", arguments: sizes)
    func syncDown(childPageSize: Int?, children: Int) async throws {
        try await withFixture(childPageSize: childPageSize) { f in
            let big = try await family(f, contacts: children)
            let small = try await family(f, contacts: 2)
            let sync = try await f.trySyncDown(
                .overwrite, try target(f, [big.account, small.account]), totalSize: 2)
            #expect(try localContacts(f) == Self.expected([big, small]))
            let contacts = try f.store.query(.all, in: "contacts").map(\.record)
            #expect(contacts.allSatisfy { $0[LocalFlags.syncId] == .int(sync.id) && !LocalFlags.isDirty($0) })
            // Wherever a child was served, it is stored alike: without the API's `attributes`.
            #expect(contacts.allSatisfy { $0["attributes"] == nil && $0["LastName"] == "Seeded" })
            #expect(try f.local("accounts").values.allSatisfy { $0["Contacts"] == nil })
        }
    }

    @Test(
        "clean resync ghosts keeps every child the server still has, past the first nested page too, and deletes one it deleted",
        arguments: sizes)
    func cleanGhosts(childPageSize: Int?, children: Int) async throws {
        try await withFixture(childPageSize: childPageSize) { f in
            let big = try await family(f, contacts: children)
            let small = try await family(f, contacts: 2)
            let target = try target(f, [big.account, small.account])
            let sync = try await f.trySyncDown(.overwrite, target, totalSize: 2)
            #expect(try localContacts(f).count == children + 2)
            // A child the ghost cleaning's query serves past the first nested page goes on the server.
            let page = try await f.client.queryFirstPage(target.remoteIdsQuery)
            let firstPage = Set(
                page.records.flatMap { $0["Contacts"]?.value(atPath: "records")?.arrayValue ?? [] }.compactMap
                {
                    $0.value(atPath: "Id")?.stringValue
                })
            #expect(firstPage.count == (childPageSize ?? 200) + 2)
            let gone = try #require(big.contacts.first { !firstPage.contains($0) })
            try await f.client.delete(type: "Contact", id: gone)

            #expect(try await f.manager.cleanResyncGhosts(id: sync.id) == 0)
            var expected = Self.expected([big, small])
            expected[gone] = nil
            #expect(try localContacts(f) == expected)
            #expect(Set(try f.local("accounts").keys) == [big.account, small.account])
        }
    }

    @Test(
        "a stop while a parent's further children are fetched ends the sync down at once; the restart stores them all",
        // A run that never asks for the nested pages leaves the wait for them hanging.
        .timeLimit(.minutes(1))
    )
    func stopDuringNestedPages() async throws {
        try await withFixture(childPageSize: 3) { f in
            let family = try await family(f, contacts: 10)
            let server = f.server.server
            // A first run, into other soups, counts a run's requests: its last three fetch the
            // children past the first nested page.
            var before = server.requestCount
            let probe = try await f.manager.syncDown(
                target: try target(f, [family.account], soups: ("probeAccounts", "probeContacts")),
                soupName: "probeAccounts")
            #expect(await f.manager.waitForSync(id: probe.id)?.status == .done)
            let nestedRequests = 3
            let run = server.requestCount - before
            #expect(try localContacts(f, "probeContacts").count == 10)

            let served = try await contactsServed(f)
            try await f.client.adminSetFaults(["latencyMs": Self.leadLatency])
            before = server.requestCount
            let sync = try await f.manager.syncDown(
                target: try target(f, [family.account]), soupName: "accounts")
            try await holdRequest(after: before + run - nestedRequests, f)
            await f.manager.stop()
            await f.manager.waitUntilStopped()
            // Not every nested page was asked for (a whole run, and the call raising the latency).
            #expect(server.requestCount < before + run + 1)
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.status == .stopped)
            // The held page was never delivered: the stop cancelled it rather than waiting for it.
            #expect(try await contactsServed(f) == served)
            // The parent's page waited for its children, so none of it was saved.
            #expect(try f.store.count(in: "accounts") == 0)
            #expect(try localContacts(f).isEmpty)

            try await f.client.adminClearFaults()
            _ = try await f.manager.restart(restartStoppedSyncs: true)
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            #expect(try localContacts(f) == Self.expected([family]))
        }
    }

    @Test(
        "a stop while the ghost cleaning follows a parent's nested pages fails it at once; nothing is deleted",
        // A run that never asks for the nested pages leaves the wait for them hanging.
        .timeLimit(.minutes(1))
    )
    func stopDuringNestedGhostIds() async throws {
        try await withFixture(childPageSize: 3) { f in
            let family = try await family(f, contacts: 10)
            let sync = try await f.trySyncDown(.overwrite, try target(f, [family.account]), totalSize: 1)
            try await f.client.delete(type: "Contact", id: family.contacts[0])
            // The ids' query, then the children past the first nested page, three at a time.
            let server = f.server.server
            let served = try await contactsServed(f)
            try await f.client.adminSetFaults(["latencyMs": Self.leadLatency])
            let before = server.requestCount
            let manager = f.manager
            let cleaning = Task { try await manager.cleanResyncGhosts(id: sync.id) }
            try await holdRequest(after: before + 1, f)
            await f.manager.stop()
            let result = await cleaning.result
            // Fewer requests than the ids' query, the call raising the latency and all three nested
            // pages.
            #expect(server.requestCount < before + 5)
            #expect(throws: SyncError.self) { try result.get() }
            if case .failure(let error as SyncError) = result { #expect(error.code == .ghostCleaningStopped) }
            await f.manager.waitUntilStopped()
            // The held page was never delivered: the stop cancelled it rather than waiting for it.
            #expect(try await contactsServed(f) == served)
            #expect(try localContacts(f).count == 10)
        }
    }

    @Test("leaveIfChanged sync up weighs every child's stamp, past the first nested page too")
    func syncUpLeaveIfChanged() async throws {
        try await withFixture(childPageSize: 3) { f in
            let (kept, changed) = (try await family(f, contacts: 10), try await family(f, contacts: 10))
            let down = try target(f, [kept.account, changed.account])
            try await f.trySyncDown(.overwrite, down, totalSize: 2)
            // A child that comes past the first nested page of the stamps' query changes on the server.
            let stampsQuery =
                "SELECT Id, LastModifiedDate, (SELECT Id, LastModifiedDate FROM Contacts) FROM Account WHERE Id = '\(changed.account)'"
            let firstPage = Set(
                (try await f.client.queryFirstPage(stampsQuery).records.first?["Contacts"]?.value(
                    atPath: "records")?
                    .arrayValue ?? []).compactMap { $0.value(atPath: "Id")?.stringValue })
            #expect(firstPage.count == 3)
            let late = try #require(changed.contacts.first { !firstPage.contains($0) })
            try await f.client.update(
                type: "Contact", id: late, fields: ["LastName": "Changed on the server"])
            for account in [kept.account, changed.account] {
                try await f.unfenced.write { transaction in
                    let entry = try #require(
                        try transaction.entry(where: "Id", equals: .string(account), in: "accounts"))
                    var record = entry.record
                    record["Name"] = "Renamed locally"
                    try transaction.upsert(
                        LocalFlags.markUpdated(record), into: "accounts", entryId: entry.entryId)
                }
            }
            let up = try ParentChildrenSyncUpTarget(
                client: f.client, parentInfo: ParentInfo(sobjectType: "Account", soupName: "accounts"),
                parentUpdateFieldlist: ["Name"],
                childrenInfo: down.childrenInfo, childrenUpdateFieldlist: ["LastName"],
                relationshipType: .masterDetail)
            let sync = try await f.manager.syncUp(
                target: up, options: SyncOptions(mergeMode: .leaveIfChanged), soupName: "accounts")
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            // Every child of the kept tree is as fetched: it goes. The other waits whole.
            #expect(try await f.client.get(type: "Account", id: kept.account)?["Name"] == "Renamed locally")
            #expect(try await f.client.get(type: "Account", id: changed.account)?["Name"] == "Family of 10")
            #expect(try f.local("accounts")[kept.account].map(LocalFlags.isDirty) == false)
            #expect(try f.local("accounts")[changed.account].map(LocalFlags.isDirty) == true)
        }
    }
}
