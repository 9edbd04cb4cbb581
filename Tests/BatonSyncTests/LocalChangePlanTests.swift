import BatonStore
import Testing

@testable import BatonSync

/// What sync up does with each kind of local record, without a store.
@Suite("Local change plan")
struct LocalChangePlanTests {
    static let clean = LocalFlags.clean(["Id": "001A", "Name": "n"], syncId: 1)
    static let created = LocalFlags.markCreated(["Name": "new"])

    static func plan(_ record: JSONObject, takenAlong: Bool = false) -> LocalChangePlan {
        LocalChangePlan.classify(record, idField: "Id", externalIdField: "Ext__c", takenAlong: takenAlong)
    }

    @Test("every kind of record")
    func kinds() {
        #expect(Self.plan(Self.clean) == .none)
        #expect(Self.plan(LocalFlags.markUpdated(Self.clean)) == .update(serverId: "001A"))
        #expect(Self.plan(LocalFlags.markDeleted(Self.clean)) == .delete(serverId: "001A"))
        #expect(Self.plan(Self.created) == .create(needsExternalId: true))
        var withExt = Self.created
        withExt["Ext__c"] = "x-1"
        #expect(Self.plan(withExt) == .create(needsExternalId: false))
        // Created, then deleted: never on the server.
        #expect(Self.plan(LocalFlags.markDeleted(Self.created)) == .drop)
        // Flagged created though it has an id (its create's answer was lost): created again, by
        // its external id.
        #expect(Self.plan(LocalFlags.markCreated(Self.clean)) == .create(needsExternalId: true))
        // No server id but only flagged updated: a create.
        #expect(Self.plan(LocalFlags.markUpdated(["Name": "x"])) == .create(needsExternalId: true))
    }

    @Test("a record a created parent takes along is sent even when clean")
    func takenAlong() {
        #expect(Self.plan(Self.clean, takenAlong: true) == .update(serverId: "001A"))
        #expect(Self.plan(LocalFlags.markDeleted(Self.created), takenAlong: true) == .drop)
    }

    @Test("the change carries the right field list, the external id only on a create, nothing on a delete")
    func changes() {
        var record = LocalFlags.markUpdated(Self.clean)
        record["Ext__c"] = "x-1"
        record["LastModifiedDate"] = "2026-01-01T00:00:00.000+0000"
        record["Other"] = 5
        let update = LocalChangePlan.update(serverId: "001A").change(
            entryId: 3, record: record, externalIdField: "Ext__c", createFields: nil, updateFields: ["Name"])
        #expect(update?.kind == .update && update?.serverId == "001A" && update?.fields == ["Name": "n"])
        let create = LocalChangePlan.create(needsExternalId: false).change(
            entryId: 3, record: record, externalIdField: "Ext__c", createFields: ["Name"], updateFields: nil)
        #expect(create?.kind == .create && create?.serverId == nil)
        #expect(create?.fields == ["Name": "n", "Ext__c": "x-1"])
        let all = LocalChangePlan.create(needsExternalId: false).change(
            entryId: 3, record: record, externalIdField: "Ext__c", createFields: nil, updateFields: nil)
        // No local flags, no server-managed fields.
        #expect(all?.fields == ["Name": "n", "Ext__c": "x-1", "Other": 5])
        let delete = LocalChangePlan.delete(serverId: "001A").change(
            entryId: 3, record: record, externalIdField: "Ext__c", createFields: nil, updateFields: nil)
        #expect(delete?.kind == .delete && delete?.fields == [:])
        #expect(
            LocalChangePlan.drop.change(
                entryId: 3, record: record, externalIdField: "Ext__c", createFields: nil, updateFields: nil)
                == nil)
    }
}
