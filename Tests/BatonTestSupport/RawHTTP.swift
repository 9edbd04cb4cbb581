import BatonJSON
import BatonServer
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP exchange as it went over the wire: what ``BatonREST/RESTClient`` does not show
/// (headers, an empty or non-JSON body), for tests of the server's answers themselves.
public struct RawReply: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]

    /// The body as JSON; nil when it is empty or not JSON.
    public var json: JSONValue? { try? JSONValue(parsing: body) }

    /// The Salesforce error code of a Salesforce-shaped error body
    /// (`[{"errorCode": …, "message": …}]`); nil for any other body.
    public var salesforceErrorCode: String? {
        guard let first = json?.arrayValue?.first, json?.arrayValue?.count == 1,
            first.value(atPath: "message")?.stringValue != nil
        else { return nil }
        return first.value(atPath: "errorCode")?.stringValue
    }
}

/// Sends one request to `server` with its bearer token (unless `headers` sets `Authorization`)
/// and returns the reply as it came.
public func rawRequest(
    _ server: RunningServer, _ method: String, _ path: String, body: String? = nil,
    headers: [String: String] = [:]
) async throws -> RawReply {
    guard let url = URL(string: server.url + path) else {
        throw RawRequestError(message: "not a URL: \(path.prefix(80))")
    }
    var request = URLRequest(url: url, timeoutInterval: 30)
    request.httpMethod = method
    request.setValue("Bearer \(server.token)", forHTTPHeaderField: "Authorization")
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    if let body {
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    guard let http = response as? HTTPURLResponse else {
        throw RawRequestError(message: "not an HTTP response")
    }
    var fields: [String: String] = [:]
    for (name, value) in http.allHeaderFields {
        if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
    }
    return RawReply(status: http.statusCode, headers: fields, body: Array(data))
}

/// A request ``rawRequest(_:_:_:body:headers:)`` could not make.
public struct RawRequestError: Error, Sendable {
    public var message: String
}
