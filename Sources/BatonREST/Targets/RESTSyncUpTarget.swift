import BatonStore
import BatonSync
import SOQL

/// Sends local changes with composite calls: creates as upserts on a client-generated external
/// id (so a retried or repeated create never duplicates), updates, and deletes, up to 200 per
/// call.
public struct RESTSyncUpTarget: SyncUpTarget {
    public let client: RESTClient
    /// The sObject type (`Account`).
    public let objectType: String
    public let externalIdFieldName: String
    public let batchSize: Int
    public let idFieldName: String
    public let modificationDateFieldName: String
    public let createFieldlist: [String]?
    public let updateFieldlist: [String]?

    /// - Parameters:
    ///   - createFieldlist: the fields creates send, in place of the sync's `fieldlist`.
    ///   - updateFieldlist: the fields updates send, in place of the sync's `fieldlist`.
    /// - Throws: `SyncError.invalidTarget` for a bad type, batch size or field name.
    public init(
        client: RESTClient, objectType: String, externalIdFieldName: String = "BatonExternalId__c",
        batchSize: Int = 200,
        idFieldName: String = "Id", modificationDateFieldName: String = "LastModifiedDate",
        createFieldlist: [String]? = nil, updateFieldlist: [String]? = nil
    ) throws {
        guard Names.isValid(objectType), !objectType.contains(".") else {
            throw SyncError(.invalidTarget, "'\(objectType.prefix(80))' is not an sObject type")
        }
        guard (1...200).contains(batchSize) else {
            throw SyncError(.invalidTarget, "sync up batch size must be between 1 and 200, not \(batchSize)")
        }
        self.client = client
        self.objectType = objectType
        self.externalIdFieldName = externalIdFieldName
        self.batchSize = batchSize
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
        for name in (createFieldlist ?? []) + (updateFieldlist ?? []) where !Names.isValid(name) {
            throw SyncError(.invalidTarget, "'\(name.prefix(80))' is not a field name")
        }
        self.createFieldlist = createFieldlist
        self.updateFieldlist = updateFieldlist
    }

    public var json: JSONObject {
        var object: JSONObject = [
            "type": "rest", "objectType": .string(objectType),
            "externalIdFieldName": .string(externalIdFieldName),
            "batchSize": .int(Int64(batchSize)), "idFieldName": .string(idFieldName),
            "modificationDateFieldName": .string(modificationDateFieldName),
        ]
        if let createFieldlist { object["createFieldlist"] = .array(createFieldlist.map(JSONValue.string)) }
        if let updateFieldlist { object["updateFieldlist"] = .array(updateFieldlist.map(JSONValue.string)) }
        return object
    }

    public func send(_ changes: [LocalChange]) async throws -> [SyncUpOutcome] {
        var outcomes = [SyncUpOutcome?](repeating: nil, count: changes.count)
        let creates = changes.indices.filter { changes[$0].kind == .create }
        let updates = changes.indices.filter { changes[$0].kind == .update }
        let deletes = changes.indices.filter { changes[$0].kind == .delete }
        if !creates.isEmpty {
            let results = try await client.compositeUpsert(
                type: objectType, externalIdField: externalIdFieldName,
                records: creates.map { changes[$0].fields })
            for (index, result) in zip(creates, results) {
                outcomes[index] =
                    result.success
                    ? result.id.map(SyncUpOutcome.created) ?? .failed("no id returned")
                    : Self.failure(result, .create)
            }
        }
        if !updates.isEmpty {
            let records = updates.map { index -> JSONObject in
                var fields = changes[index].fields
                fields["Id"] = changes[index].serverId.map(JSONValue.string) ?? .null
                return fields
            }
            let results = try await client.compositeUpdate(type: objectType, records: records)
            for (index, result) in zip(updates, results) {
                outcomes[index] = result.success ? .updated : Self.failure(result, .update)
            }
        }
        if !deletes.isEmpty {
            let results = try await client.compositeDelete(ids: deletes.compactMap { changes[$0].serverId })
            for (index, result) in zip(deletes, results) {
                outcomes[index] = result.success ? .deleted : Self.failure(result, .delete)
            }
        }
        return outcomes.map { $0 ?? .failed("not sent") }
    }

    /// A failed record's outcome: gone from the server only on `ENTITY_IS_DELETED` naming no
    /// field (``RecordWriteError``); any other refusal keeps the record dirty with its error.
    static func failure(_ result: CompositeResult, _ kind: LocalChange.Kind) -> SyncUpOutcome {
        RecordWriteError(
            call: .collection, errorCode: result.errorCode, message: result.message, fields: result.fields
        ).outcome(for: kind)
    }

    public func fetchModificationTimeStamps(ids: [String]) async throws -> [String: Int64] {
        var stamps: [String: Int64] = [:]
        var start = 0
        while start < ids.count {
            let chunk = ids[start..<min(ids.count, start + 200)]
            start += chunk.count
            let query = SOQLQuery(
                fields: [.field(idFieldName), .field(modificationDateFieldName)], object: objectType,
                condition: .isIn(field: idFieldName, values: chunk.map(Literal.string), negated: false))
            for try await page in client.query(query.soql) {
                for record in page.records {
                    if let id = record[idFieldName]?.stringValue,
                        let stamp = modificationTimeStamp(of: record)
                    {
                        stamps[id] = stamp
                    }
                }
            }
        }
        return stamps
    }

    public func modificationTimeStamp(of record: JSONObject) -> Int64? {
        record[modificationDateFieldName]?.stringValue.flatMap(DateTimeLiteral.milliseconds)
    }
}
