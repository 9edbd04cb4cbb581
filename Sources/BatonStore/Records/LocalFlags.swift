/// The record fields the sync engine relies on (Mobile Sync's names).
public enum LocalFlags {
    /// True when the record has any local change not yet synced up.
    public static let local = "__local__"
    /// Created locally, unknown to the server.
    public static let locallyCreated = "__locally_created__"
    /// Updated locally since it was fetched.
    public static let locallyUpdated = "__locally_updated__"
    /// Deleted locally; kept until sync up deletes it on the server.
    public static let locallyDeleted = "__locally_deleted__"
    /// The last sync-up error for this record, if any.
    public static let lastError = "__last_error__"
    /// The id of the sync that last fetched the record.
    public static let syncId = "__sync_id__"

    /// The record as the server last sent it: all flags false, no error, stamped with `syncId`.
    public static func clean(_ record: JSONObject, syncId: Int64?) -> JSONObject {
        var copy = record
        // One copy, at its final size (not a copy, then a rehash as the flags go in).
        copy.reserveCapacity(record.count + 5)
        copy[local] = false
        copy[locallyCreated] = false
        copy[locallyUpdated] = false
        copy[locallyDeleted] = false
        copy[lastError] = nil
        if let syncId { copy[syncId_] = .int(syncId) }
        return copy
    }

    private static let syncId_ = syncId

    /// What ``clean(_:syncId:)`` sets, in that order (a nil value removes the name; without a
    /// sync id the record keeps its own).
    static func cleanMembers(syncId: Int64?) -> [(key: String, value: JSONValue?)] {
        var members: [(key: String, value: JSONValue?)] = [
            (local, false), (locallyCreated, false), (locallyUpdated, false), (locallyDeleted, false),
            (lastError, nil),
        ]
        if let syncId { members.append((syncId_, .int(syncId))) }
        return members
    }

    /// The record marked as created locally.
    public static func markCreated(_ record: JSONObject) -> JSONObject {
        var copy = record
        copy[local] = true
        copy[locallyCreated] = true
        copy[locallyUpdated] = copy[locallyUpdated] ?? false
        copy[locallyDeleted] = copy[locallyDeleted] ?? false
        return copy
    }

    /// The record marked as updated locally (a created record stays created).
    public static func markUpdated(_ record: JSONObject) -> JSONObject {
        var copy = record
        copy[local] = true
        copy[locallyUpdated] = true
        copy[locallyCreated] = copy[locallyCreated] ?? false
        copy[locallyDeleted] = copy[locallyDeleted] ?? false
        return copy
    }

    /// The record marked as deleted locally.
    public static func markDeleted(_ record: JSONObject) -> JSONObject {
        var copy = record
        copy[local] = true
        copy[locallyDeleted] = true
        copy[locallyCreated] = copy[locallyCreated] ?? false
        copy[locallyUpdated] = copy[locallyUpdated] ?? false
        return copy
    }

    /// True when the record has local changes.
    public static func isDirty(_ record: JSONObject) -> Bool { record[local]?.boolValue == true }
    /// True when the record was created locally.
    public static func isCreated(_ record: JSONObject) -> Bool { record[locallyCreated]?.boolValue == true }
    /// True when the record was updated locally.
    public static func isUpdated(_ record: JSONObject) -> Bool { record[locallyUpdated]?.boolValue == true }
    /// True when the record was deleted locally.
    public static func isDeleted(_ record: JSONObject) -> Bool { record[locallyDeleted]?.boolValue == true }
}
