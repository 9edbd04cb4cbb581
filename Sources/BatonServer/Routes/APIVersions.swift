import BatonJSON
import Hummingbird

/// The API versions the server routes, v31.0 (Summer '14) to v62.0 (Winter '25), as
/// Salesforce lists them at `GET /services/data/`. Mobile SDK apps send their own version, and
/// common clients default to others than the newest.
enum APIVersions {
    static let numbers = 31...62

    /// "60.0" for `v60.0`, nil for anything not routed.
    static func number(of segment: String) -> Int? {
        guard segment.hasPrefix("v"), segment.hasSuffix(".0"),
            let number = Int(segment.dropFirst().dropLast(2)), numbers.contains(number)
        else { return nil }
        return number
    }

    /// The release that brought version `number`: three a year, Spring, Summer, Winter (named
    /// for the next year).
    static func label(_ number: Int) -> String {
        let step = number - 31
        let season = ["Summer", "Winter", "Spring"][step % 3]
        return "\(season) '\(14 + (step + 2) / 3)"
    }

    /// The `GET /services/data/` body.
    static var listing: JSONValue {
        .array(
            numbers.map { number in
                .object([
                    "label": .string(label(number)), "url": .string("/services/data/v\(number).0"),
                    "version": .string("\(number).0"),
                ])
            })
    }
}

extension APIVersions {
    /// The `GET /services/data/vNN.0` body: the resources this server routes under the version,
    /// as Salesforce lists its own there.
    static func resources(_ apiPath: String) -> JSONValue {
        .object(
            JSONObject(
                uniqueKeysWithValues: ["sobjects", "query", "search", "composite", "ui-api"].map {
                    ($0, JSONValue.string("\(apiPath)/\($0)"))
                }))
    }
}

/// Answers `NOT_FOUND` for a version segment the server does not route.
struct APIVersionMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let version = context.parameters.get("version"), APIVersions.number(of: version) != nil else {
            throw SalesforceError.notFound()
        }
        return try await next(request, context)
    }
}

extension RequestContext {
    /// `/services/data/vNN.0` as the request named it.
    var apiPath: String { "/services/data/\(parameters.get("version") ?? "v60.0")" }
}
