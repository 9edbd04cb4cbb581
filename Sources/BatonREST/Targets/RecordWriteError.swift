import BatonSync

/// The error Salesforce answered for one record's write in a sync up, and what it says about
/// the record: gone from the server, or refused. One rule for every sync up target, because
/// taking a refusal for a deletion loses the change: the record is created again (a duplicate
/// on the server, the original left unchanged) and marked clean under the new id.
///
/// - A call on one record (`sobjects/T/ID`, or a subrequest of `composite`): gone only on HTTP
///   404, as Mobile Sync 7.1.2 decides.
/// - An sObject Collections result (`composite/sobjects`, no status of its own): gone only on
///   `ENTITY_IS_DELETED` (or `NOT_FOUND`) naming no field.
/// - Anything else is refused, a refusal naming a field above all: `ENTITY_IS_DELETED` on a
///   lookup to a deleted record, `INVALID_CROSS_REFERENCE_KEY`, `REQUIRED_FIELD_MISSING`.
/// - In a parent-children tree, a child's `ENTITY_IS_DELETED` on its link to the parent says
///   the parent is gone (Mobile Sync's rule: under `overwrite` the parent is created again).
///
/// Not thrown: a target turns it into the change's ``SyncUpOutcome``.
package struct RecordWriteError: Sendable, Hashable {
    /// How the answer came.
    package enum Call: Sendable, Hashable {
        /// A call on one record, with its HTTP status.
        case singleRecord(status: Int)
        /// One result of an sObject Collections call.
        case collection
    }

    /// What the answer says about the record.
    package enum Verdict: Sendable, Hashable {
        /// The record is not on the server.
        case gone
        /// A tree's child refused because the parent its link names is deleted.
        case parentGone
        /// The server refused what was sent; the record is there.
        case refused
    }

    package var call: Call
    /// The Salesforce error code (`ENTITY_IS_DELETED`), `ERROR` when the answer had none.
    package var errorCode: String
    package var message: String
    /// The fields the error names; empty when it names none.
    package var fields: [String]

    package init(call: Call, errorCode: String?, message: String?, fields: [String]) {
        self.call = call
        self.errorCode = errorCode ?? "ERROR"
        self.message = message ?? "refused by the server"
        self.fields = fields
    }

    /// What the answer says about the record; `parentLink` is the field linking a tree's child
    /// to its parent, for a child's answer.
    package func verdict(parentLink: String? = nil) -> Verdict {
        switch call {
        case .singleRecord(let status) where status == 404:
            return .gone
        case .collection
        where fields.isEmpty && (errorCode == "ENTITY_IS_DELETED" || errorCode == "NOT_FOUND"):
            return .gone
        case .singleRecord, .collection:
            break
        }
        if let parentLink, errorCode == "ENTITY_IS_DELETED", fields.contains(parentLink) {
            return .parentGone
        }
        return .refused
    }

    /// The outcome of a change of `kind` that got this answer. A create has no server record to
    /// lose, so it is only ever refused (or its parent gone).
    package func outcome(for kind: LocalChange.Kind, parentLink: String? = nil) -> SyncUpOutcome {
        switch verdict(parentLink: parentLink) {
        case .gone where kind != .create: .missingOnServer
        case .parentGone: .parentMissing
        case .gone, .refused: .failed(lastError)
        }
    }

    /// What `__last_error__` says: the code, the fields named, and the server's message.
    package var lastError: String {
        let named = fields.isEmpty ? "" : " on " + fields.joined(separator: ", ")
        return "\(errorCode)\(named): \(message)"
    }
}
