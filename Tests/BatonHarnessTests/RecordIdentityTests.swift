import BatonJSON
import BatonStore
import Testing

@testable import BatonHarness

@Suite("record identity across local entry, server Id and external id")
struct RecordIdentityTests {
    @Test("links are transitive and symmetric")
    func unionFind() {
        var same = SameRecord()
        same.link("entry:1", "id:001")
        same.link("ext:x", "id:001")
        same.link("entry:9", "id:009")
        #expect(same.root("entry:1") == same.root("ext:x"))
        #expect(same.root("ext:x") == same.root("id:001"))
        #expect(same.root("entry:1") != same.root("entry:9"))
        #expect(same.root("unknown") == "unknown")
    }

    func entry(_ id: Int64, _ record: JSONObject) -> SoupEntry {
        SoupEntry(entryId: id, record: record, lastModified: 0)
    }

    @Test("an edit superseded by a later one to the same entry is not lost")
    func supersededOnOneEntry() throws {
        let edits = [
            LocalEdit(token: "chaos-1", entryId: 1, serverId: "001", externalId: nil),
            LocalEdit(token: "chaos-2", entryId: 1, serverId: "001", externalId: nil),
        ]
        let server: [JSONObject] = [["Id": "001", "Name": "chaos-2"]]
        try ChaosRun.checkNoEditLost(
            round: 3, edits: edits, serverRecords: server,
            local: [entry(1, ["Id": "001", "Name": "chaos-2"])])

        // The server kept the older write: the newest is lost.
        let stale: [JSONObject] = [["Id": "001", "Name": "chaos-1"]]
        let error = #expect(throws: ChaosViolation.self) {
            try ChaosRun.checkNoEditLost(round: 3, edits: edits, serverRecords: stale, local: [])
        }
        #expect(error?.invariant == "no local edit lost")
        #expect(error?.detail.contains("chaos-2") == true)
    }

    @Test("a create known by its external id and a later edit known by its server Id are one record")
    func createThenEditAcrossIds() throws {
        // Created locally as entry 5 (external id x1); after its sync up the server record came
        // back down as entry 7 with Id 001 (the local create merged away); then edited as 001.
        let edits = [
            LocalEdit(token: "chaos-create", entryId: 5, serverId: nil, externalId: "x1"),
            LocalEdit(token: "chaos-edit", entryId: 7, serverId: "001", externalId: nil),
        ]
        let server: [JSONObject] = [["Id": "001", "BatonExternalId__c": "x1", "Name": "chaos-edit"]]
        try ChaosRun.checkNoEditLost(round: 1, edits: edits, serverRecords: server, local: [])

        // Without the external id on the server record the two writes are separate records,
        // and the create's own name is missing.
        let unlinked: [JSONObject] = [["Id": "001", "Name": "chaos-edit"]]
        let error = #expect(throws: ChaosViolation.self) {
            try ChaosRun.checkNoEditLost(round: 1, edits: edits, serverRecords: unlinked, local: [])
        }
        #expect(error?.detail.contains("chaos-create") == true)
    }

    @Test("a local entry links a server Id to the entry an edit was made on")
    func linkedThroughLocalEntry() throws {
        let edits = [
            LocalEdit(token: "chaos-a", entryId: 4, serverId: nil, externalId: nil),
            LocalEdit(token: "chaos-b", entryId: 8, serverId: "002", externalId: nil),
        ]
        let server: [JSONObject] = [["Id": "002", "Name": "chaos-b"]]
        // Entry 4 now holds record 002: both edits were to it, the newest reached the server.
        try ChaosRun.checkNoEditLost(
            round: 2, edits: edits, serverRecords: server, local: [entry(4, ["Id": "002"])])
        #expect(throws: ChaosViolation.self) {
            try ChaosRun.checkNoEditLost(round: 2, edits: edits, serverRecords: server, local: [])
        }
    }
}
