import BatonJSON
import SOQL

/// What `sObject Get Deleted` answers for a window.
public struct DeletedRecords: Sendable, Hashable {
    /// The ids deleted in the window, with when (ms since 1970).
    public var deleted: [String: Int64]
    /// The date of the newest entry purged from the delete log (ms since 1970): a window that
    /// starts before it may miss deletions.
    public var earliestDateAvailable: Int64?
    /// How far the answer covers (ms since 1970): the next window starts here.
    public var latestDateCovered: Int64?

    init(_ body: JSONValue) throws {
        guard let records = body.value(atPath: "deletedRecords")?.arrayValue else {
            throw RESTError(.malformedResponse, "getDeleted response lacks deletedRecords")
        }
        var deleted: [String: Int64] = [:]
        for record in records {
            guard let id = record.value(atPath: "id")?.stringValue else {
                throw RESTError(.malformedResponse, "a getDeleted record lacks its id")
            }
            deleted[id] =
                record.value(atPath: "deletedDate")?.stringValue.flatMap(DateTimeLiteral.milliseconds) ?? 0
        }
        self.deleted = deleted
        earliestDateAvailable = body.value(atPath: "earliestDateAvailable")?.stringValue.flatMap(
            DateTimeLiteral.milliseconds)
        latestDateCovered = body.value(atPath: "latestDateCovered")?.stringValue.flatMap(
            DateTimeLiteral.milliseconds)
    }
}

extension RESTClient {
    /// `sObject Get Deleted`: the ids of `type` deleted between `start` and `end` (ms since
    /// 1970; Salesforce ignores their seconds and wants them more than a minute apart).
    ///
    /// - Throws: ``RESTError``; `INVALID_REPLICATION_DATE` when the window is too short, or starts
    ///   before what the server's delete log still holds.
    public func getDeleted(type: String, start: Int64, end: Int64) async throws -> DeletedRecords {
        let path =
            "\(apiPath)/sobjects/\(Self.encode(type))/deleted/?start=\(Self.encode(DateTimeLiteral.format(milliseconds: start)))&end=\(Self.encode(DateTimeLiteral.format(milliseconds: end)))"
        return try DeletedRecords(try await send(.GET, path, idempotent: true).body)
    }

    /// Test and bench support: purges the server's delete log of `type` before `before` (ms
    /// since 1970; now when nil), as an administrator emptying the recycle bin does.
    public func adminPurgeDeleted(type: String, before: Int64? = nil) async throws {
        var body: JSONObject = ["type": .string(type)]
        if let before { body["before"] = .int(before) }
        _ = try await send(.POST, "/admin/purgeDeleted", body: .object(body), idempotent: true)
    }
}
