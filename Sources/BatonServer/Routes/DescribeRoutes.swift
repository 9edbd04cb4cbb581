import BatonJSON
import Hummingbird

/// What clients read besides records: `GET sobjects/TYPE` (basic information and recent items),
/// `GET sobjects/TYPE/describe`, `GET sobjects/TYPE/describe/layouts`, the UI API's
/// `GET ui-api/layout/TYPE`, and SOSL's `GET search?q=FIND …`. Answers take Salesforce's shapes
/// for the subset Mobile Sync's targets and common clients read; unknown types are `404
/// NOT_FOUND`, as on Salesforce.
struct DescribeRoutes: Sendable {
    let storage: RecordStorage
    let data: DataRoutes

    func register<Context: RequestContext>(on group: RouterGroup<Context>) {
        group.get("sobjects/:type") { _, context -> Response in
            let object = try storage.object(try context.parameters.require("type"))
            return try await data.withFaults(isWrite: false) {
                let describer = Describer(schema: storage.schema, apiPath: context.apiPath)
                let recent = try storage.read { db in
                    try storage.recentItems.ids(type: object.name).prefix(RecentItems.limit).compactMap {
                        id -> JSONValue? in
                        guard let record = try storage.fullRecord(db, type: object.name, id: id) else {
                            return nil
                        }
                        return [
                            "attributes": [
                                "type": .string(object.name),
                                "url": .string("\(context.apiPath)/sobjects/\(object.name)/\(id)"),
                            ],
                            "Id": .string(id), "Name": record["Name"] ?? .null,
                        ]
                    }
                }
                return .json(
                    .ok,
                    [
                        "objectDescribe": .object(describer.objectSummary(object)),
                        "recentItems": .array(recent),
                    ])
            }
        }
        group.get("sobjects/:type/describe") { _, context -> Response in
            let object = try storage.object(try context.parameters.require("type"))
            return try await data.withFaults(isWrite: false) {
                .json(.ok, Describer(schema: storage.schema, apiPath: context.apiPath).describe(object))
            }
        }
        group.get("sobjects/:type/describe/layouts") { _, context -> Response in
            let object = try storage.object(try context.parameters.require("type"))
            return try await data.withFaults(isWrite: false) {
                .json(
                    .ok, Describer(schema: storage.schema, apiPath: context.apiPath).describeLayouts(object))
            }
        }
        // Another method on a describe URL of a known type is 405, naming the ones it takes, as
        // on Salesforce.
        for path in ["sobjects/:type/describe", "sobjects/:type/describe/layouts"] {
            for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
                group.on(RouterPath(path), method: method) { request, context -> Response in
                    _ = try storage.object(try context.parameters.require("type"))
                    return .methodNotAllowed(request.method, allowed: [.get, .head])
                }
            }
        }
        group.get("ui-api/layout/:type") { request, context -> Response in
            let object = try storage.object(try context.parameters.require("type"))
            let layoutType = DataRoutes.formParameter("layoutType", in: request.uri.query) ?? "Full"
            guard ["Full", "Compact"].contains(layoutType) else {
                throw SalesforceError(
                    status: 400, "INVALID_PARAMETER_VALUE",
                    "layoutType must be Full or Compact, not '\(layoutType.prefix(40))'")
            }
            return try await data.withFaults(isWrite: false) {
                .json(
                    .ok,
                    Describer(schema: storage.schema, apiPath: context.apiPath).uiLayout(
                        object, layoutType: layoutType))
            }
        }
        group.get("search") { request, context -> Response in
            guard let text = DataRoutes.formParameter("q", in: request.uri.query), !text.isEmpty else {
                throw SOSLSearch.malformed("missing query parameter q")
            }
            let search = try SOSLSearch(parsing: text)
            return try await data.withFaults(isWrite: false) {
                let (body, served) = try search.run(storage: storage, apiPath: context.apiPath)
                for (type, count) in served { data.stats.served(count, type: type) }
                return .json(.ok, body)
            }
        }
    }
}
