import BatonJSON
import Foundation
import Hummingbird
import NIOCore
import SOQL

/// The data API under `/services/data/vNN.0` (every version in ``APIVersions``): query, sObject
/// CRUD (GET by id or by external id, `?fields=`), and upsert.
struct DataRoutes: Sendable {
    let storage: RecordStorage
    let engine: QueryEngine
    let faults: FaultInjector
    let stats: ServerStats
    let held: HeldTransactions
    /// How long the delete log keeps an id (ms): Salesforce's 15 days unless configured.
    let deletedRetention: Int64

    func register<Context: RequestContext>(on group: RouterGroup<Context>) {
        registerQueries(on: group)
        registerDeleteLog(on: group)
        registerRecords(on: group)
    }

    /// `sObject Get Deleted`: the ids of a type deleted in a window of whole minutes, with
    /// `earliestDateAvailable` and `latestDateCovered` (``DeleteLog``).
    func registerDeleteLog<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.get("sobjects/:type/deleted") { request, context -> Response in
            let type = try storage.object(try context.parameters.require("type")).name
            return try await withFaults(isWrite: false) {
                let start = try Self.replicationDate("start", in: request.uri.query)
                let end = try Self.replicationDate("end", in: request.uri.query)
                let inFlight = [storage.inFlight.oldest, held.oldestStamp].compactMap { $0 }.min()
                let answer = try storage.deleted(
                    type: type, start: start, end: end, retention: deletedRetention, inFlight: inFlight)
                stats.served(answer.deleted.count, type: type)
                return .json(.ok, answer.json)
            }
        }
    }

    /// A `start` or `end` parameter: a date-time (`2024-05-05T10:00:00Z`, `…+00:00` encoded).
    static func replicationDate(_ name: String, in query: String?) throws -> Int64 {
        guard let text = formParameter(name, in: query), !text.isEmpty else {
            throw SalesforceError(status: 400, "MISSING_ARGUMENT", "\(name) must be specified")
        }
        guard let millis = DateTimeLiteral.milliseconds(text) else {
            throw DeleteLog.invalidDate("\(name) is not a valid date-time: \(text.prefix(40))")
        }
        return millis
    }

    /// The version's resources, and queries with their pages.
    func registerQueries<Context: RequestContext>(on group: RouterGroup<Context>) {
        // The version's resources: an API call like the others (faults apply), touching no data.
        group.get { _, context -> Response in
            try await withFaults(isWrite: false) { .json(.ok, APIVersions.resources(context.apiPath)) }
        }
        group.get("query") { request, context -> Response in
            try await withFaults(isWrite: false) {
                guard let soql = Self.formParameter("q", in: request.uri.query), !soql.isEmpty else {
                    throw SalesforceError.malformedQuery("missing query parameter q")
                }
                let (batchSize, apiPath) = (try batchSize(request) ?? 2000, context.apiPath)
                return deliver(
                    try await engine.offThePool { engine in
                        try engine.start(soql: soql, batchSize: batchSize, apiPath: apiPath)
                    })
            }
        }
        group.get("query/:locator") { request, context -> Response in
            try await withFaults(isWrite: false) {
                // As with SOAP's queryMore, the batch size may change from one page to the next.
                let (locator, batchSize) = (try context.parameters.require("locator"), try batchSize(request))
                return deliver(
                    try await engine.offThePool { engine in
                        try engine.next(locator: locator, batchSize: batchSize)
                    })
            }
        }
    }

    /// sObject records: create, read, update, delete and upsert, by id or external id.
    func registerRecords<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.post("sobjects/:type") { request, context -> Response in
            var request = request
            let type = try storage.object(try context.parameters.require("type")).name
            let body = try await request.jsonObjectBody()
            return try await withFaults(isWrite: true) {
                let id = try storage.write { db in
                    try storage.create(db, type: type, fields: Self.fields(body))
                }
                return .json(.created, ["id": .string(id), "success": true, "errors": []])
            }
        }
        group.get("sobjects/:type/:id") { request, context -> Response in
            let type = try storage.object(try context.parameters.require("type")).name
            let id = try context.parameters.require("id")
            return try await withFaults(isWrite: false) {
                let record = try storage.read { db in
                    guard let record = try storage.fullRecord(db, type: type, id: id) else {
                        throw try storage.missing(db, id: id)
                    }
                    return record
                }
                storage.recentItems.touch(type: type, id: id)
                return try recordResponse(record, type: type, request: request, context: context)
            }
        }
        // By external id: the field sits in the `id` slot (one parameter name per position).
        group.get("sobjects/:type/:id/:value") { request, context -> Response in
            let type = try storage.object(try context.parameters.require("type")).name
            let field = try Self.externalIdSlot(context)
            let value = try context.parameters.require("value").removingPercentEncoding ?? ""
            return try await withFaults(isWrite: false) {
                let record = try storage.write { db -> JSONObject in
                    guard let id = try storage.id(db, type: type, field: field, value: value),
                        let record = try storage.fullRecord(db, type: type, id: id)
                    else { throw SalesforceError.notFound() }
                    return record
                }
                return try recordResponse(record, type: type, request: request, context: context)
            }
        }
        group.patch("sobjects/:type/:id") { request, context -> Response in
            var request = request
            let type = try storage.object(try context.parameters.require("type")).name
            let id = try context.parameters.require("id")
            let body = try await request.jsonObjectBody()
            return try await withFaults(isWrite: true) {
                try storage.write { db in
                    try storage.update(db, type: type, id: id, fields: Self.fields(body))
                }
                return Response(status: .noContent)
            }
        }
        group.delete("sobjects/:type/:id") { _, context -> Response in
            let type = try storage.object(try context.parameters.require("type")).name
            let id = try context.parameters.require("id")
            return try await withFaults(isWrite: true) {
                try storage.write { db in try storage.delete(db, type: type, id: id) }
                return Response(status: .noContent)
            }
        }
        // The router wants one parameter name per path position, so the external-id field sits
        // in the `id` slot here.
        group.patch("sobjects/:type/:id/:value") { request, context -> Response in
            var request = request
            let type = try storage.object(try context.parameters.require("type")).name
            let field = try Self.externalIdSlot(context)
            let value = try context.parameters.require("value").removingPercentEncoding ?? ""
            let body = try await request.jsonObjectBody()
            return try await withFaults(isWrite: true) {
                let (id, created) = try storage.write { db in
                    try storage.upsert(db, type: type, field: field, value: value, fields: Self.fields(body))
                }
                return .json(
                    created ? .created : .ok,
                    ["id": .string(id), "success": true, "errors": [], "created": .bool(created)])
            }
        }
    }

    /// The external-id field of a `sobjects/TYPE/FIELD/VALUE` URL. `describe` there is a
    /// describe URL the describe routes do not serve (`describe/nope`): `404 NOT_FOUND` like any
    /// unknown resource, not an answer about external id fields.
    static func externalIdSlot<Context: RequestContext>(_ context: Context) throws -> String {
        let field = try context.parameters.require("id")
        guard field != "describe" else { throw SalesforceError.notFound() }
        return field
    }

    /// One record as `GET sobjects/TYPE/ID` answers it: with `attributes`, and only the fields
    /// `?fields=A,B` names when given (any case, answered in the declared case; an unknown one is
    /// `INVALID_FIELD`).
    func recordResponse<Context: RequestContext>(
        _ record: JSONObject, type: String, request: Request, context: Context
    ) throws -> Response {
        let id = record["Id"]?.stringValue ?? ""
        var out: JSONObject
        if let list = Self.formParameter("fields", in: request.uri.query), !list.isEmpty {
            let object = try storage.object(type)
            out = [:]
            for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                guard let field = object.field(name) else {
                    throw SalesforceError.noSuchColumn(name, on: object.name)
                }
                out[field.name] = Projector.value(field.name, in: record) ?? .null
            }
        } else {
            out = record
        }
        out["attributes"] = [
            "type": .string(type), "url": .string("\(context.apiPath)/sobjects/\(type)/\(id)"),
        ]
        stats.served(1, type: type)
        return .json(.ok, .object(out))
    }

    /// A query page whose records count as served only once the whole body was written (a
    /// client that hung up mid-way did not get them).
    func deliver(_ page: QueryEngine.Page) -> Response {
        let stats = self.stats
        let buffer = ByteBuffer(bytes: page.body)
        return Response(
            status: .ok, headers: [.contentType: "application/json;charset=UTF-8"],
            body: ResponseBody(contentLength: buffer.readableBytes) { writer in
                try await writer.write(buffer)
                try await writer.finish(nil)
                stats.served(page.count, type: page.type)
            })
    }

    /// A form-encoded query parameter: `+` is a space, `%XX` a byte (what curl and browsers send).
    /// Given with no value (`name=` or `name`), it is the empty string, not absent: a route
    /// refuses an empty value as it refuses a wrong one.
    static func formParameter(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == name else { continue }
            guard parts.count == 2 else { return "" }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    /// The record's fields without the `attributes` envelope.
    static func fields(_ body: JSONObject) -> JSONObject {
        var fields = body
        fields["attributes"] = nil
        return fields
    }

    /// The `batchSize` of the `Sforce-Query-Options` header, if the request has one.
    func batchSize(_ request: Request) throws -> Int? {
        guard
            let options = request.headers.first(where: { $0.name.canonicalName == "sforce-query-options" })?
                .value
        else { return nil }
        for part in options.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if pair.count == 2, pair[0].lowercased() == "batchsize" {
                guard let size = Int(pair[1]), (1...2000).contains(size) else {
                    throw SalesforceError(
                        status: 400, "INVALID_QUERY_OPTIONS", "batchSize must be between 1 and 2000")
                }
                return size
            }
        }
        return nil
    }

    /// Applies the configured latency and faults around one data request; counts the writes
    /// that committed and holds their responses when asked to.
    func withFaults(isWrite: Bool, _ body: () async throws -> Response) async throws -> Response {
        let latency = faults.latencyMs
        if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
        let commitDelay = isWrite ? faults.commitDelayMs : 0
        guard commitDelay > 0 else { return try await withDecidedFault(isWrite: isWrite, body) }
        // Stamped now, committed later: its records show up after ones stamped meanwhile, and
        // the delete log covers no window past its stamp until it has committed.
        let stamp = storage.transactionStartStamp()
        stats.fault("commitDelay")
        return try await storage.inFlight.during(stamp) {
            try await Task.sleep(for: .milliseconds(commitDelay))
            return try await RecordStorage.$startedStamp.withValue(stamp) {
                try await withDecidedFault(isWrite: isWrite, body)
            }
        }
    }

    /// The request with the fault the injector decides for it.
    private func withDecidedFault(isWrite: Bool, _ body: () async throws -> Response) async throws -> Response
    {
        switch faults.decide(isWrite: isWrite) {
        case .none:
            let response = try await body()
            if isWrite { try await committed() }
            return response
        case .fail:
            stats.fault("error")
            throw SalesforceError(
                status: 503, "SERVER_UNAVAILABLE", "the server is unavailable (injected fault)")
        case .dropConnection:
            stats.fault("dropConnection")
            return .dropped(after: "{\"totalSize\":")
        case .dropAfterCommit:
            stats.fault("dropAfterCommit")
            _ = try await body()
            try await committed()
            return .dropped(after: "")
        }
    }

    /// After a write's body ran (it committed, or it failed with a record-level error).
    private func committed() async throws {
        stats.writeCommitted()
        let hold = faults.holdAfterCommitMs
        if hold > 0 {
            stats.fault("holdAfterCommit")
            try await Task.sleep(for: .milliseconds(hold))
        }
    }
}
