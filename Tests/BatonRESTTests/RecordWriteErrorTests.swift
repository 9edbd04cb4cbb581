import BatonREST
import BatonSync
import Testing

/// The one rule both sync up targets follow to tell a record gone from the server from a
/// refusal of what was sent.
@Suite("a record's write error: gone or refused")
struct RecordWriteErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var call: RecordWriteError.Call
        var code: String
        var fields: [String]
        var parentLink: String?
        var verdict: RecordWriteError.Verdict

        var testDescription: String {
            "\(call) \(code) \(fields) \(parentLink.map { "link \($0)" } ?? "") → \(verdict)"
        }
    }

    static let cases: [Case] = [
        // One record's call: only 404 is gone, whatever the code.
        Case(call: .singleRecord(status: 404), code: "ENTITY_IS_DELETED", fields: [], verdict: .gone),
        Case(call: .singleRecord(status: 404), code: "NOT_FOUND", fields: [], verdict: .gone),
        Case(
            call: .singleRecord(status: 400), code: "ENTITY_IS_DELETED", fields: ["AccountId"],
            verdict: .refused),
        Case(call: .singleRecord(status: 400), code: "ENTITY_IS_DELETED", fields: [], verdict: .refused),
        Case(
            call: .singleRecord(status: 400), code: "INVALID_CROSS_REFERENCE_KEY", fields: ["AccountId"],
            verdict: .refused),
        Case(
            call: .singleRecord(status: 400), code: "REQUIRED_FIELD_MISSING", fields: ["Name"],
            verdict: .refused),
        // sObject Collections: gone only when ENTITY_IS_DELETED (or NOT_FOUND) names no field.
        Case(call: .collection, code: "ENTITY_IS_DELETED", fields: [], verdict: .gone),
        Case(call: .collection, code: "NOT_FOUND", fields: [], verdict: .gone),
        Case(call: .collection, code: "ENTITY_IS_DELETED", fields: ["AccountId"], verdict: .refused),
        Case(call: .collection, code: "INVALID_CROSS_REFERENCE_KEY", fields: [], verdict: .refused),
        Case(
            call: .collection, code: "INVALID_CROSS_REFERENCE_KEY", fields: ["AccountId"], verdict: .refused),
        Case(call: .collection, code: "REQUIRED_FIELD_MISSING", fields: ["LastName"], verdict: .refused),
        // A tree's child whose link to its parent names a deleted record: the parent is gone.
        Case(
            call: .singleRecord(status: 400), code: "ENTITY_IS_DELETED", fields: ["AccountId"],
            parentLink: "AccountId", verdict: .parentGone),
        Case(
            call: .singleRecord(status: 400), code: "ENTITY_IS_DELETED", fields: ["ReportsToId"],
            parentLink: "AccountId", verdict: .refused),
        Case(
            call: .singleRecord(status: 404), code: "ENTITY_IS_DELETED", fields: [], parentLink: "AccountId",
            verdict: .gone),
    ]

    @Test("the verdict", arguments: cases)
    func verdict(_ example: Case) {
        let error = RecordWriteError(
            call: example.call, errorCode: example.code, message: "m", fields: example.fields)
        #expect(error.verdict(parentLink: example.parentLink) == example.verdict)
    }

    @Test(
        "gone is missingOnServer for an update or a delete, never for a create; refused keeps code and fields"
    )
    func outcomes() {
        let gone = RecordWriteError(
            call: .collection, errorCode: "ENTITY_IS_DELETED", message: "entity is deleted", fields: [])
        #expect(gone.outcome(for: .update) == .missingOnServer)
        #expect(gone.outcome(for: .delete) == .missingOnServer)
        #expect(gone.outcome(for: .create) == .failed("ENTITY_IS_DELETED: entity is deleted"))
        let lookup = RecordWriteError(
            call: .collection, errorCode: "ENTITY_IS_DELETED", message: "entity is deleted",
            fields: ["AccountId"])
        for kind in [LocalChange.Kind.create, .update, .delete] {
            #expect(lookup.outcome(for: kind) == .failed("ENTITY_IS_DELETED on AccountId: entity is deleted"))
        }
        let child = RecordWriteError(
            call: .singleRecord(status: 400), errorCode: "ENTITY_IS_DELETED", message: "entity is deleted",
            fields: ["AccountId"])
        #expect(child.outcome(for: .create, parentLink: "AccountId") == .parentMissing)
        let unexplained = RecordWriteError(
            call: .singleRecord(status: 500), errorCode: nil, message: nil, fields: [])
        #expect(unexplained.outcome(for: .update) == .failed("ERROR: refused by the server"))
    }
}
