import BatonStore

/// What sync up does with one local record: the rule both sync-up paths (record by record, and
/// parent-children trees) follow, pure, so it is tested without a store.
package enum LocalChangePlan: Sendable, Equatable {
    /// Nothing to send: the record has no local change (and is not taken along by a created
    /// parent).
    case none
    /// Created and deleted locally, never on the server: it goes, locally only.
    case drop
    /// A create, sent as an upsert on the external id; `needsExternalId` when the record has none
    /// yet (it gets one, saved locally before anything is sent, so a lost answer and a second
    /// send create nothing twice).
    case create(needsExternalId: Bool)
    /// An update of the server's record `serverId`.
    case update(serverId: String)
    /// A delete of the server's record `serverId`.
    case delete(serverId: String)

    /// The plan for `record`: created when flagged so or when it has no server id; a record a
    /// created parent takes along (`takenAlong`) is sent even when it is not dirty, to link it
    /// to the parent's new id.
    package static func classify(
        _ record: JSONObject, idField: String, externalIdField: String, takenAlong: Bool = false
    ) -> LocalChangePlan {
        guard LocalFlags.isDirty(record) || takenAlong else { return .none }
        let serverId = record[idField]?.stringValue
        guard !LocalFlags.isCreated(record), let serverId else {
            if LocalFlags.isDeleted(record) { return .drop }
            return .create(needsExternalId: record[externalIdField]?.stringValue == nil)
        }
        return LocalFlags.isDeleted(record) ? .delete(serverId: serverId) : .update(serverId: serverId)
    }

    /// The change to send for the record at `entryId`, as the plan says (nil for `none` and
    /// `drop`): a create carries the create field list and the external id, an update the update
    /// field list, a delete no fields.
    package func change(
        entryId: Int64, record: JSONObject, externalIdField: String, createFields: [String]?,
        updateFields: [String]?
    ) -> LocalChange? {
        switch self {
        case .none, .drop:
            return nil
        case .create:
            return LocalChange(
                entryId: entryId, kind: .create, serverId: nil,
                fields: Self.outgoing(record, createFields, externalIdField))
        case .update(let serverId):
            return LocalChange(
                entryId: entryId, kind: .update, serverId: serverId,
                fields: Self.outgoing(record, updateFields, nil))
        case .delete(let serverId):
            return LocalChange(entryId: entryId, kind: .delete, serverId: serverId, fields: [:])
        }
    }

    /// Server-managed fields never sent up.
    static let serverFields: Set<String> = [
        "Id", "LastModifiedDate", "SystemModstamp", "CreatedDate", "attributes",
    ]

    /// The fields to send: no local flags, no server-managed fields, only `fieldlist` if given.
    package static func outgoing(_ record: JSONObject, _ fieldlist: [String]?, _ extField: String?)
        -> JSONObject
    {
        var fields: JSONObject = [:]
        for (key, value) in record
        where !key.hasPrefix("__") && !key.hasPrefix("_soup") && !serverFields.contains(key) {
            if let fieldlist, !fieldlist.contains(key), key != extField { continue }
            fields[key] = value
        }
        return fields
    }
}
