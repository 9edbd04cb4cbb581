import BatonREST
import BatonStore
import BatonSync
import Testing

/// Mobile Sync 7.1's `ParentChildrenSyncTests` change matrix (its tests 21–58,
/// `trySyncUpsWithVariousChanges…`), ported case for case: a local change to an account and one
/// of its contacts, a remote change to each, then a `leaveIfChanged` sync up that completes or
/// is blocked as the SDK's says, and, when blocked, an `overwrite` sync up that completes.
@Suite("Mobile Sync 7.1's parent-children change matrix", .timeLimit(.minutes(5)))
struct ParentChildrenChangeMatrixTests {
    enum Change: String, Sendable, CustomTestStringConvertible {
        case none = "N"
        case update = "U"
        case delete = "D"
        var testDescription: String { rawValue }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var localAccount: Change
        var remoteAccount: Change
        var localContact: Change
        var remoteContact: Change
        var contacts = 2
        var testDescription: String {
            "\(name) (\(localAccount)\(remoteAccount)\(localContact)\(remoteContact))"
        }

        /// The SDK's predicate for a leaveIfChanged sync up that completes.
        var completes: Bool {
            (remoteAccount == .none || (remoteAccount == .delete && localAccount == .delete))
                && (remoteContact == .none || (remoteContact == .delete && localContact == .delete))
        }
    }

    static let cases: [Case] = [
        Case(
            name: "LocallyUpdatedChild", localAccount: .none, remoteAccount: .none, localContact: .update,
            remoteContact: .none),
        Case(
            name: "LocallyUpdatedChildRemotelyUpdatedChild", localAccount: .none, remoteAccount: .none,
            localContact: .update, remoteContact: .update),
        Case(
            name: "LocallyUpdatedChildRemotelyDeletedChild", localAccount: .none, remoteAccount: .none,
            localContact: .update, remoteContact: .delete),
        Case(
            name: "LocallyDeletedChild", localAccount: .none, remoteAccount: .none, localContact: .delete,
            remoteContact: .none),
        Case(
            name: "LocallyDeletedChildRemotelyUpdatedChild", localAccount: .none, remoteAccount: .none,
            localContact: .delete, remoteContact: .update),
        Case(
            name: "LocallyDeletedChildRemotelyDeletedChild", localAccount: .none, remoteAccount: .none,
            localContact: .delete, remoteContact: .delete),
        Case(
            name: "LocallyUpdatedParent", localAccount: .update, remoteAccount: .none, localContact: .none,
            remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentRemotelyUpdatedParent", localAccount: .update, remoteAccount: .update,
            localContact: .none, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentRemotelyDeletedParent", localAccount: .update, remoteAccount: .delete,
            localContact: .none, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentUpdatedChild", localAccount: .update, remoteAccount: .none,
            localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyUpdatedChild", localAccount: .update,
            remoteAccount: .none, localContact: .update, remoteContact: .update),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyDeletedChild", localAccount: .update,
            remoteAccount: .none, localContact: .update, remoteContact: .delete),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyUpdatedParent", localAccount: .update,
            remoteAccount: .update, localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyUpdatedParentUpdatedChild", localAccount: .update,
            remoteAccount: .update, localContact: .update, remoteContact: .update),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyUpdatedParentDeletedChild", localAccount: .update,
            remoteAccount: .update, localContact: .update, remoteContact: .delete),
        Case(
            name: "LocallyUpdatedParentUpdatedChildRemotelyDeletedParent", localAccount: .update,
            remoteAccount: .delete, localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentDeletedChild", localAccount: .update, remoteAccount: .none,
            localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyUpdatedChild", localAccount: .update,
            remoteAccount: .none, localContact: .delete, remoteContact: .update),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyDeletedChild", localAccount: .update,
            remoteAccount: .none, localContact: .delete, remoteContact: .delete),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyUpdatedParent", localAccount: .update,
            remoteAccount: .update, localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyUpdatedParentUpdatedChild", localAccount: .update,
            remoteAccount: .update, localContact: .delete, remoteContact: .update),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyUpdatedParentDeletedChild", localAccount: .update,
            remoteAccount: .update, localContact: .delete, remoteContact: .delete),
        Case(
            name: "LocallyUpdatedParentDeletedChildRemotelyDeletedParent", localAccount: .update,
            remoteAccount: .delete, localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyDeletedParent", localAccount: .delete, remoteAccount: .none, localContact: .none,
            remoteContact: .none),
        Case(
            name: "LocallyDeletedParentRemotelyUpdatedParent", localAccount: .delete, remoteAccount: .update,
            localContact: .none, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentRemotelyDeletedParent", localAccount: .delete, remoteAccount: .delete,
            localContact: .none, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentUpdatedChild", localAccount: .delete, remoteAccount: .none,
            localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentUpdatedChildRemotelyUpdatedParent", localAccount: .delete,
            remoteAccount: .update, localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentUpdatedChildRemotelyDeletedParent", localAccount: .delete,
            remoteAccount: .delete, localContact: .update, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentDeletedChild", localAccount: .delete, remoteAccount: .none,
            localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentDeletedChildRemotelyUpdatedParent", localAccount: .delete,
            remoteAccount: .update, localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyDeletedParentDeletedChildRemotelyDeletedParent", localAccount: .delete,
            remoteAccount: .delete, localContact: .delete, remoteContact: .none),
        Case(
            name: "LocallyUpdatedParentNoChildren", localAccount: .update, remoteAccount: .none,
            localContact: .none, remoteContact: .none, contacts: 0),
        Case(
            name: "LocallyUpdatedParentRemotelyUpdatedParentNoChildren", localAccount: .update,
            remoteAccount: .update, localContact: .none, remoteContact: .none, contacts: 0),
        Case(
            name: "LocallyUpdatedParentRemotelyDeletedParentNoChildren", localAccount: .update,
            remoteAccount: .delete, localContact: .none, remoteContact: .none, contacts: 0),
        Case(
            name: "LocallyDeletedParentNoChildren", localAccount: .delete, remoteAccount: .none,
            localContact: .none, remoteContact: .none, contacts: 0),
        Case(
            name: "LocallyDeletedParentRemotelyUpdatedParentNoChildren", localAccount: .delete,
            remoteAccount: .update, localContact: .none, remoteContact: .none, contacts: 0),
        Case(
            name: "LocallyDeletedParentRemotelyDeletedParentNoChildren", localAccount: .delete,
            remoteAccount: .delete, localContact: .none, remoteContact: .none, contacts: 0),
    ]

    let helper = ParentChildrenSyncUpTests()

    /// Local record `id` of `soup`, or nil.
    func local(_ f: SyncFixture, _ soup: String, _ id: String) throws -> JSONObject? { try f.local(soup)[id] }

    func server(_ f: SyncFixture, _ type: String, _ id: String) async throws -> JSONObject? {
        try await f.client.get(type: type, id: id)
    }

    @Test("testSyncUp… with each change", arguments: cases)
    func change(_ c: Case) async throws {
        try await withSyncFixture { f in
            let tree = try await helper.createOnServerAndSyncDown(f, accounts: 2, contacts: c.contacts)
            let accountId = tree.keys.sorted()[0]
            let contactId = c.contacts > 0 ? tree[accountId]![0] : nil
            let otherContactId = c.contacts > 0 ? tree[accountId]![1] : nil
            let original = try #require(try local(f, "accounts", accountId))
            let originalContacts = try f.local("contacts")
            let target = try helper.upTarget(f)

            // Local changes.
            switch c.localAccount {
            case .update: try await helper.update(f, "accounts", accountId, "Name", "account_l_upd")
            case .delete: try await helper.delete(f, "accounts", accountId)
            case .none: break
            }
            if let contactId {
                switch c.localContact {
                case .update: try await helper.update(f, "contacts", contactId, "LastName", "contact_l_upd")
                case .delete: try await helper.delete(f, "contacts", contactId)
                case .none: break
                }
            }
            // Remote changes (a delete of the account takes its contacts, as on Salesforce).
            switch c.remoteAccount {
            case .update:
                try await f.client.update(type: "Account", id: accountId, fields: ["Name": "account_r_upd"])
            case .delete: try await f.client.delete(type: "Account", id: accountId)
            case .none: break
            }
            if let contactId, c.remoteAccount != .delete {
                switch c.remoteContact {
                case .update:
                    try await f.client.update(
                        type: "Contact", id: contactId, fields: ["LastName": "contact_r_upd"])
                case .delete: try await f.client.delete(type: "Contact", id: contactId)
                case .none: break
                }
            }

            try await helper.trySyncUp(f, 1, .leaveIfChanged, target: target)
            if c.completes {
                try await checkCompleted(
                    f, c, accountId, contactId, otherContactId, original, originalContacts)
                try await helper.trySyncUp(f, 0, .overwrite, target: target)
                return
            }
            // Blocked: nothing sent, nothing cleaned.
            let account = try #require(try local(f, "accounts", accountId))
            #expect(LocalFlags.isCreated(account) == false)
            #expect((account[LocalFlags.locallyUpdated]?.boolValue ?? false) == (c.localAccount == .update))
            #expect(LocalFlags.isDeleted(account) == (c.localAccount == .delete))
            if c.localAccount == .update { #expect(account["Name"] == "account_l_upd") }
            switch c.remoteAccount {
            case .update: #expect(try await server(f, "Account", accountId)?["Name"] == "account_r_upd")
            case .delete: #expect(try await server(f, "Account", accountId) == nil)
            case .none: #expect(try await server(f, "Account", accountId)?["Name"] == original["Name"])
            }
            if let contactId {
                let contact = try #require(try local(f, "contacts", contactId))
                #expect(
                    (contact[LocalFlags.locallyUpdated]?.boolValue ?? false) == (c.localContact == .update))
                #expect(LocalFlags.isDeleted(contact) == (c.localContact == .delete))
                if c.localContact == .update { #expect(contact["LastName"] == "contact_l_upd") }
                #expect(
                    try f.local("contacts").values.filter { $0["AccountId"] == .string(accountId) }.count == 2
                )
                if c.remoteAccount == .delete {
                    #expect(try await server(f, "Contact", contactId) == nil)
                    #expect(try await server(f, "Contact", otherContactId!) == nil)
                } else if c.remoteContact == .update {
                    #expect(try await server(f, "Contact", contactId)?["LastName"] == "contact_r_upd")
                } else if c.remoteContact == .delete {
                    #expect(try await server(f, "Contact", contactId) == nil)
                }
            }
            try await helper.trySyncUp(f, 1, .overwrite, target: target)
            try await checkCompleted(f, c, accountId, contactId, otherContactId, original, originalContacts)
        }
    }

    /// The SDK's "completed" checks.
    func checkCompleted(
        _ f: SyncFixture, _ c: Case, _ accountId: String, _ contactId: String?, _ otherContactId: String?,
        _ original: JSONObject, _ originalContacts: [String: JSONObject]
    ) async throws {
        let accounts = try f.local("accounts")
        var newAccountId: String?
        switch c.localAccount {
        case .none:
            #expect(accounts[accountId].map(LocalFlags.isDirty) == false)
            #expect(try await server(f, "Account", accountId)?["Name"] == original["Name"])
        case .update:
            if c.remoteAccount == .delete {
                // Created again: a new id, the old one gone here and there.
                #expect(accounts[accountId] == nil)
                let recreated = try #require(accounts.first { $0.value["Name"] == "account_l_upd" })
                newAccountId = recreated.key
                #expect(recreated.key != accountId && !LocalFlags.isDirty(recreated.value))
                #expect(try await server(f, "Account", recreated.key)?["Name"] == "account_l_upd")
            } else {
                #expect(accounts[accountId].map(LocalFlags.isDirty) == false)
                #expect(try await server(f, "Account", accountId)?["Name"] == "account_l_upd")
            }
        case .delete:
            #expect(accounts[accountId] == nil)
            #expect(try await server(f, "Account", accountId) == nil)
        }
        guard let contactId, let otherContactId else { return }
        let contacts = try f.local("contacts")
        if c.localAccount == .delete {
            for id in [contactId, otherContactId] {
                #expect(contacts[id] == nil)
                #expect(try await server(f, "Contact", id) == nil)
            }
            return
        }
        let parent = newAccountId ?? accountId
        func checkRecreatedOrSynced(_ id: String, lastName: JSONValue?, recreated: Bool) async throws {
            if recreated {
                #expect(contacts[id] == nil)
                let found = try #require(
                    contacts.first {
                        $0.value["LastName"] == lastName && $0.value["AccountId"] == .string(parent)
                    })
                #expect(found.key != id && !LocalFlags.isDirty(found.value))
                #expect(try await server(f, "Contact", found.key)?["AccountId"] == .string(parent))
            } else {
                let record = try #require(contacts[id])
                #expect(!LocalFlags.isDirty(record) && record["AccountId"] == .string(parent))
                let onServer = try #require(try await server(f, "Contact", id))
                #expect(onServer["LastName"] == lastName && onServer["AccountId"] == .string(parent))
            }
        }
        let recreated = c.remoteAccount == .delete || c.remoteContact == .delete
        switch c.localContact {
        case .none:
            try await checkRecreatedOrSynced(
                contactId, lastName: originalContacts[contactId]?["LastName"], recreated: recreated)
        case .update:
            try await checkRecreatedOrSynced(contactId, lastName: "contact_l_upd", recreated: recreated)
        case .delete:
            #expect(contacts[contactId] == nil)
            #expect(try await server(f, "Contact", contactId) == nil)
        }
        if c.remoteAccount == .delete {
            try await checkRecreatedOrSynced(
                otherContactId, lastName: originalContacts[otherContactId]?["LastName"], recreated: true)
        }
    }
}
