import BatonJSON
import Foundation
import GRDB
import Hummingbird

/// `POST composite`: up to 25 subrequests run in order, in one transaction, each answering
/// `{body, httpHeaders, httpStatusCode, referenceId}`. A subrequest may use an earlier one's
/// answer as `@{referenceId.field}` in its URL or body (`@{newAccount.id}`). Subrequests are
/// sObject calls: create (`POST sobjects/T`), read, update, delete (`sobjects/T/ID`) and upsert
/// (`PATCH sobjects/T/FIELD/VALUE`). With `allOrNone`, one failure rolls all back; without, a
/// failure stops only the subrequests that refer to it (`PROCESSING_HALTED`).
struct CompositeRequestRoute: Sendable {
    static let maxSubrequests = 25

    let storage: RecordStorage
    let data: DataRoutes

    func register<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.post("composite") { request, context -> Response in
            var request = request
            let body = try await request.jsonObjectBody()
            let subrequests = try Self.subrequests(body)
            let allOrNone = body["allOrNone"]?.boolValue ?? false
            return try await data.withFaults(isWrite: true) {
                .json(
                    .ok,
                    [
                        "compositeResponse": .array(
                            try run(subrequests, allOrNone: allOrNone, apiPath: context.apiPath))
                    ])
            }
        }
    }

    struct Subrequest {
        var method: String
        var url: String
        var referenceId: String
        var body: JSONValue?
    }

    static func subrequests(_ body: JSONObject) throws -> [Subrequest] {
        guard let list = body["compositeRequest"]?.arrayValue else {
            throw SalesforceError.badRequest("expected {\"allOrNone\": bool, \"compositeRequest\": [...]}")
        }
        guard (1...maxSubrequests).contains(list.count) else {
            throw SalesforceError(
                status: 400, "INVALID_BATCH_SIZE",
                "a composite request holds 1 to \(maxSubrequests) subrequests, not \(list.count)")
        }
        var seen = Set<String>()
        return try list.map { item in
            guard let method = item.value(atPath: "method")?.stringValue?.uppercased(),
                let url = item.value(atPath: "url")?.stringValue,
                let referenceId = item.value(atPath: "referenceId")?.stringValue
            else {
                throw SalesforceError.badRequest("each subrequest needs method, url and referenceId")
            }
            guard !referenceId.isEmpty,
                referenceId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else {
                throw SalesforceError(
                    status: 400, "INVALID_INPUT",
                    "referenceId must be letters, digits and _: \(referenceId.prefix(80))")
            }
            guard seen.insert(referenceId).inserted else {
                throw SalesforceError(
                    status: 400, "INVALID_INPUT", "Duplicate referenceId provided: \(referenceId)")
            }
            return Subrequest(
                method: method, url: url, referenceId: referenceId, body: item.value(atPath: "body"))
        }
    }

    func run(_ subrequests: [Subrequest], allOrNone: Bool, apiPath: String) throws -> [JSONValue] {
        var results: [JSONValue] = []
        try storage.transaction { db in
            results = []
            var bodies: [String: JSONValue] = [:]
            var failed = false
            for subrequest in subrequests {
                var status = 0
                var body: JSONValue = .null
                var headers: JSONObject = [:]
                do {
                    let url = try Self.resolving(subrequest.url, bodies: bodies)
                    let input = try subrequest.body.map { try Self.resolving($0, bodies: bodies) }
                    if allOrNone {
                        (status, body, headers) = try perform(
                            subrequest.method, url, input, db: db, apiPath: apiPath)
                    } else {
                        try db.inSavepoint {
                            (status, body, headers) = try perform(
                                subrequest.method, url, input, db: db, apiPath: apiPath)
                            return .commit
                        }
                    }
                    bodies[subrequest.referenceId] = body
                } catch let error as SalesforceError {
                    failed = true
                    status = error.status
                    body = [error.recordElement]
                }
                results.append([
                    "body": body, "httpHeaders": .object(headers), "httpStatusCode": .int(Int64(status)),
                    "referenceId": .string(subrequest.referenceId),
                ])
            }
            if allOrNone && failed {
                let halted = SalesforceError(
                    status: 400, "PROCESSING_HALTED",
                    "The transaction was rolled back since another operation in the same transaction failed.")
                results = results.map { result in
                    guard let code = result.value(atPath: "httpStatusCode")?.intValue, code < 300 else {
                        return result
                    }
                    var object = result.objectValue ?? [:]
                    object["httpStatusCode"] = 400
                    object["body"] = [halted.recordElement]
                    object["httpHeaders"] = [:]
                    return .object(object)
                }
                return false
            }
            return true
        }
        return results
    }

    /// One sObject call: the status, the body and the headers it answers.
    func perform(_ method: String, _ url: String, _ body: JSONValue?, db: Database, apiPath: String) throws
        -> (
            Int, JSONValue, JSONObject
        )
    {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        var parts = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        // `/services/data/vNN.0/sobjects/…`
        guard parts.count >= 4, parts[0] == "services", parts[1] == "data",
            APIVersions.number(of: parts[2]) != nil,
            parts[3] == "sobjects", parts.count >= 5
        else {
            throw SalesforceError.notFound("The requested resource does not exist: \(url.prefix(120))")
        }
        parts.removeFirst(4)
        let object = try storage.object(parts[0])
        let fields = DataRoutes.fields(body?.objectValue ?? [:])
        switch (method, parts.count) {
        case ("POST", 1):
            let id = try storage.create(db, type: object.name, fields: fields)
            return (
                201, ["id": .string(id), "success": true, "errors": []],
                ["Location": .string("\(apiPath)/sobjects/\(object.name)/\(id)")]
            )
        case ("GET", 2):
            guard var record = try storage.fullRecord(db, type: object.name, id: parts[1]) else {
                throw try storage.missing(db, id: parts[1])
            }
            record["attributes"] = [
                "type": .string(object.name),
                "url": .string("\(apiPath)/sobjects/\(object.name)/\(parts[1])"),
            ]
            return (200, .object(record), [:])
        case ("PATCH", 2):
            try storage.update(db, type: object.name, id: parts[1], fields: fields)
            return (204, .null, [:])
        case ("DELETE", 2):
            try storage.delete(db, type: object.name, id: parts[1])
            return (204, .null, [:])
        case ("PATCH", 3):
            let (id, created) = try storage.upsert(
                db, type: object.name, field: parts[1], value: parts[2], fields: fields)
            return (
                created ? 201 : 200,
                ["id": .string(id), "success": true, "errors": [], "created": .bool(created)],
                created ? ["Location": .string("\(apiPath)/sobjects/\(object.name)/\(id)")] : [:]
            )
        default:
            throw SalesforceError(
                status: 405, "METHOD_NOT_ALLOWED",
                "\(method) is not allowed on \(url.prefix(120)) in a composite request")
        }
    }

    /// `text` with each `@{ref.path}` replaced by that value of an earlier answer.
    static func resolving(_ text: String, bodies: [String: JSONValue]) throws -> String {
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "@{") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                out += rest[start.lowerBound...]
                return out
            }
            let reference = rest[start.upperBound..<end]
            let parts = reference.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, let value = bodies[parts[0]]?.value(atPath: parts[1]), !value.isNull
            else {
                throw SalesforceError(
                    status: 400, "PROCESSING_HALTED",
                    "Invalid reference specified. No value for \(reference) found in \(parts.first ?? "")")
            }
            out += value.stringValue ?? value.jsonString
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }

    static func resolving(_ value: JSONValue, bodies: [String: JSONValue]) throws -> JSONValue {
        switch value {
        case .string(let text) where text.contains("@{"): return .string(try resolving(text, bodies: bodies))
        case .object(let object): return .object(try object.mapValues { try resolving($0, bodies: bodies) })
        case .array(let array): return .array(try array.map { try resolving($0, bodies: bodies) })
        default: return value
        }
    }
}
