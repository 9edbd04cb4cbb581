import BatonStore
import BatonSync
import SOQL

/// Mobile Sync's MRU target (`SFMruSyncDownTarget`): the records of `objectType` the user used
/// most recently (`GET sobjects/TYPE`'s `recentItems`), fetched whole with `fieldlist` on every
/// run. Clean resync ghosts removes the local records the server no longer has (not those no
/// longer recent), as Mobile Sync's does.
public struct MruSyncDownTarget: SyncDownTarget {
    public let client: RESTClient
    public let objectType: String
    public let fieldlist: [String]
    public let idFieldName: String
    public let modificationDateFieldName: String

    /// - Throws: `SyncError.invalidTarget` for a bad type or field name.
    public init(
        client: RESTClient, objectType: String, fieldlist: [String], idFieldName: String = "Id",
        modificationDateFieldName: String = "LastModifiedDate"
    ) throws {
        try TargetSupport.requireType(objectType)
        try TargetSupport.requireFields(fieldlist)
        self.client = client
        self.objectType = objectType
        self.fieldlist = fieldlist
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
    }

    public var json: JSONObject {
        [
            "type": "mru", "sobjectType": .string(objectType),
            "fieldlist": .array(fieldlist.map(JSONValue.string)),
            "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
    }

    public func startFetch(_ start: FetchStart) async throws -> SyncDownPage {
        let info = try await client.send(.GET, "\(client.apiPath)/sobjects/\(objectType)", idempotent: true)
            .body
        let ids = (info.value(atPath: "recentItems")?.arrayValue ?? []).compactMap {
            $0.value(atPath: idFieldName)?.stringValue
        }
        guard !ids.isEmpty else { return SyncDownPage(records: [], totalSize: 0, next: nil) }
        let page = try await client.queryFirstPage(
            TargetSupport.idQuery(fields: fieldlist, of: objectType, ids: ids).soql)
        return SyncDownPage(
            records: page.records, totalSize: page.totalSize, next: page.done ? nil : page.nextRecordsUrl)
    }

    public func continueFetch(after page: SyncDownPage) async throws -> SyncDownPage? {
        guard let next = page.next else { return nil }
        let fetched = try await client.queryNextPage(next)
        return SyncDownPage(
            records: fetched.records, totalSize: page.totalSize,
            next: fetched.done ? nil : fetched.nextRecordsUrl)
    }

    public func startRemoteIdFetch() async throws -> RemoteIdPage {
        throw SyncError(.invalidTarget, "the MRU target checks ghosts by existence")
    }

    public func continueRemoteIdFetch(after page: RemoteIdPage) async throws -> RemoteIdPage? { nil }

    public var checksGhostsByExistence: Bool { true }

    public func existingIds(among ids: [String]) async throws -> [String] {
        try await TargetSupport.existingIds(ids, of: objectType, idField: idFieldName, client: client)
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }
}

/// Checks and queries the targets share.
enum TargetSupport {
    static func requireType(_ type: String) throws {
        guard Names.isValid(type), !type.contains(".") else {
            throw SyncError(.invalidTarget, "'\(type.prefix(80))' is not an sObject type")
        }
    }

    static func requireFields(_ fields: [String]) throws {
        guard !fields.isEmpty else { throw SyncError(.invalidTarget, "the fieldlist is empty") }
        for name in fields where !Names.isValid(name) {
            throw SyncError(.invalidTarget, "'\(name.prefix(80))' is not a field name")
        }
    }

    /// `SELECT fields FROM type WHERE Id IN (ids)`, `Id` added to the fields when missing.
    static func idQuery(fields: [String], of type: String, ids: [String], idField: String = "Id") -> SOQLQuery
    {
        SOQLQuery(
            fields: fields.map(SelectItem.field), object: type,
            condition: .isIn(field: idField, values: ids.map(Literal.string), negated: false)
        ).addingFields([idField])
    }

    /// Which of `ids` exist on the server (one query per 500).
    static func existingIds(_ ids: [String], of type: String, idField: String, client: RESTClient)
        async throws
        -> [String]
    {
        var found: [String] = []
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(ids.count, start + 500)])
            start += batch.count
            for try await page in client.query(
                idQuery(fields: [idField], of: type, ids: batch, idField: idField).soql)
            {
                found += page.records.compactMap { $0[idField]?.stringValue }
            }
        }
        return found
    }
}
