import BatonJSON
import Foundation
import GRDB
import Hummingbird

/// `composite/sobjects`: batch create (POST), update (PATCH), delete (DELETE ?ids=) and upsert
/// (PATCH `composite/sobjects/{Type}/{ExtIdField}`), up to 200 records, with `allOrNone`.
struct CompositeRoutes: Sendable {
    static let maxRecords = 200

    let storage: RecordStorage
    let data: DataRoutes

    func register<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.post("composite/sobjects") { request, _ -> Response in
            var request = request
            let (allOrNone, records) = try Self.batch(try await request.jsonObjectBody())
            return try await reply(allOrNone: allOrNone, count: records.count) { db, index in
                let (type, fields) = try typed(records[index])
                if fields["id"] != nil || fields["Id"] != nil {
                    throw SalesforceError(
                        status: 400, "INVALID_FIELD", "cannot specify Id in an insert call",
                        fields: ["Id"])
                }
                return [
                    "id": .string(try storage.create(db, type: type, fields: fields)),
                    "success": true, "errors": [],
                ]
            }
        }
        group.patch("composite/sobjects") { request, _ -> Response in
            var request = request
            let (allOrNone, records) = try Self.batch(try await request.jsonObjectBody())
            return try await reply(allOrNone: allOrNone, count: records.count) { db, index in
                var (type, fields) = try typed(records[index])
                guard
                    let id = (fields.removeValue(forKey: "id") ?? fields.removeValue(forKey: "Id"))?
                        .stringValue
                else {
                    throw SalesforceError(
                        status: 400, "MISSING_ARGUMENT", "Id not specified in an update call",
                        fields: ["Id"])
                }
                try storage.update(db, type: type, id: id, fields: fields)
                return ["id": .string(id), "success": true, "errors": []]
            }
        }
        group.delete("composite/sobjects") { request, _ -> Response in
            let ids = (request.uri.queryParameters.get("ids") ?? "").split(separator: ",").map(String.init)
            guard !ids.isEmpty, ids.count <= Self.maxRecords else {
                throw SalesforceError(
                    status: 400, "INVALID_FIELD", "ids must list 1 to \(Self.maxRecords) ids")
            }
            let allOrNone = request.uri.queryParameters.get("allOrNone")?.lowercased() == "true"
            return try await reply(allOrNone: allOrNone, count: ids.count) { db, index in
                try storage.delete(db, type: nil, id: ids[index])
                return ["id": .string(ids[index]), "success": true, "errors": []]
            }
        }
        group.patch("composite/sobjects/:type/:field") { request, context -> Response in
            var request = request
            let type = try storage.object(try context.parameters.require("type")).name
            let field = try context.parameters.require("field")
            let (allOrNone, records) = try Self.batch(try await request.jsonObjectBody())
            return try await reply(allOrNone: allOrNone, count: records.count) { db, index in
                let (recordType, fields) = try typed(records[index], default: type)
                guard recordType == type else {
                    throw SalesforceError(
                        status: 400, "INVALID_TYPE", "record type does not match the URL")
                }
                guard let value = fields[field], !value.isNull else {
                    throw SalesforceError(
                        status: 400, "MISSING_ARGUMENT", "\(field) not specified", fields: [field])
                }
                let text = value.stringValue ?? value.jsonString
                let (id, created) = try storage.upsert(
                    db, type: type, field: field, value: text, fields: fields)
                return ["id": .string(id), "success": true, "errors": [], "created": .bool(created)]
            }
        }
    }

    /// The composite response for `count` records, each run by `operation`, with faults applied.
    func reply(allOrNone: Bool, count: Int, _ operation: (Database, Int) throws -> JSONObject) async throws
        -> Response
    {
        try await data.withFaults(isWrite: true) {
            .json(.ok, try run(allOrNone: allOrNone, count: count, operation))
        }
    }

    /// Runs each record's operation; with allOrNone, one failure rolls everything back.
    func run(allOrNone: Bool, count: Int, _ operation: (Database, Int) throws -> JSONObject) throws
        -> JSONValue
    {
        var results: [JSONValue] = []
        try storage.transaction { db in
            results = []
            var failed = false
            for index in 0..<count {
                do {
                    if allOrNone {
                        results.append(.object(try operation(db, index)))
                    } else {
                        // Each record in its own savepoint, so one failure keeps the others.
                        var result: JSONObject = [:]
                        try db.inSavepoint {
                            result = try operation(db, index)
                            return .commit
                        }
                        results.append(.object(result))
                    }
                } catch let error as SalesforceError {
                    failed = true
                    // A failed record's result has no id, as on Salesforce.
                    results.append(["success": false, "errors": [error.compositeElement]])
                }
            }
            if allOrNone && failed {
                let rolledBack = SalesforceError(
                    status: 400, "ALL_OR_NONE_OPERATION_ROLLED_BACK",
                    "Record rolled back because not all records were valid")
                results = results.map { result in
                    if case .object(let object) = result, object["success"] == false { return result }
                    return ["success": false, "errors": [rolledBack.compositeElement]]
                }
                return false
            }
            return true
        }
        return .array(results)
    }

    static func batch(_ body: JSONObject) throws -> (Bool, [JSONObject]) {
        guard let records = body["records"]?.arrayValue else {
            throw SalesforceError.badRequest("expected {\"allOrNone\": bool, \"records\": [...]}")
        }
        guard records.count <= maxRecords else {
            throw SalesforceError(status: 400, "EXCEEDED_ID_LIMIT", "record limit exceeded (\(maxRecords))")
        }
        let objects = try records.map { value -> JSONObject in
            guard let object = value.objectValue else {
                throw SalesforceError.badRequest("each record must be an object")
            }
            return object
        }
        return (body["allOrNone"]?.boolValue ?? false, objects)
    }

    /// The record's type (from `attributes.type`) and its fields.
    func typed(_ record: JSONObject, default defaultType: String? = nil) throws -> (String, JSONObject) {
        guard let type = record["attributes"]?.value(atPath: "type")?.stringValue ?? defaultType else {
            throw SalesforceError(status: 400, "INVALID_TYPE", "each record needs attributes.type")
        }
        var fields = record
        fields["attributes"] = nil
        guard let object = storage.schema.object(type) else {
            throw SalesforceError(
                status: 400, "INVALID_TYPE", "sObject type '\(type.prefix(80))' is not supported")
        }
        return (object.name, fields)
    }
}
