import BatonJSON
import Hummingbird
import NIOCore

/// Largest request body accepted; larger ones get `413 REQUEST_ENTITY_TOO_LARGE`.
let maxRequestBody = 8 * 1024 * 1024

/// Longest request line, and longest header list, accepted, in bytes. A query at SOQL's limit
/// of 100,000 characters fits even percent-encoded (up to 12 bytes a character), so it reaches
/// its route and is answered there (`MALFORMED_QUERY` past the limit); a longer head gets `431`
/// from ``UndecodableRequestHandler``.
let maxRequestHead = 2 * 1024 * 1024

extension Response {
    /// A JSON response.
    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json;charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: value.jsonText(sortedKeys: false))))
    }

    /// The Salesforce error array for `error`.
    static func salesforce(_ error: SalesforceError) -> Response {
        .json(HTTPResponse.Status(code: error.status), .array([error.element]))
    }

    /// `405 METHOD_NOT_ALLOWED` with an `Allow` header, as Salesforce answers a resource asked
    /// with a method it does not take (a POST on a describe URL), so a client learns the method
    /// is wrong rather than the URL.
    static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: [HTTPRequest.Method]) -> Response {
        let list = allowed.map(\.rawValue).joined(separator: ",")
        var response = Response.salesforce(
            SalesforceError(
                status: 405, "METHOD_NOT_ALLOWED",
                "HTTP Method '\(method.rawValue.prefix(20))' not allowed. Allowed are \(list)"))
        response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return response
    }

    /// A response that starts and then loses its connection, as a crashing proxy would.
    static func dropped(after partial: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json;charset=UTF-8"],
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: partial))
                throw DroppedConnection()
            })
    }
}

/// Thrown inside a response body to make the server close the connection mid-response.
struct DroppedConnection: Error {}

extension Request {
    /// The body parsed as JSON; `JSON_PARSER_ERROR` or `REQUEST_ENTITY_TOO_LARGE` otherwise.
    mutating func jsonBody() async throws -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: maxRequestBody)
        } catch {
            throw SalesforceError(
                status: 413, "REQUEST_ENTITY_TOO_LARGE", "request body larger than \(maxRequestBody) bytes")
        }
        do {
            return try JSONValue(parsing: buffer.readableBytesView, maxDepth: 64)
        } catch let error as JSONParseError {
            throw SalesforceError.badRequest(error.description)
        }
    }

    /// The body as a JSON object.
    mutating func jsonObjectBody() async throws -> JSONObject {
        guard case .object(let object) = try await jsonBody() else {
            throw SalesforceError.badRequest("expected a JSON object")
        }
        return object
    }
}

/// Bearer-token auth on every route, Salesforce-shaped errors, and request counting.
struct APIMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    let stats: ServerStats

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws
        -> Response
    {
        stats.request()
        guard let header = request.headers[.authorization], header == "Bearer \(token)" else {
            return .salesforce(.invalidSession)
        }
        do {
            return try await next(request, context)
        } catch let error as SalesforceError {
            return .salesforce(error)
        } catch let error as HTTPError where error.status == .notFound {
            return .salesforce(.notFound())
        }
    }
}
