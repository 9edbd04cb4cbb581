import AsyncHTTPClient
import BatonJSON
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// A client for the Salesforce REST subset Mobile Sync uses (and the reference server's admin
/// routes): bearer token, timeouts, bounded retries with backoff on idempotent calls, and prompt
/// cancellation — cancelling the calling task cancels the HTTP request in flight.
///
/// ```swift
/// let client = RESTClient(baseURL: "http://127.0.0.1:8080", token: token)
/// for try await page in client.query("SELECT Id, Name FROM Account") { print(page.records.count) }
/// ```
public struct RESTClient: Sendable {
    /// How failed idempotent calls are retried.
    public struct RetryPolicy: Sendable, Hashable {
        /// Attempts in all, including the first.
        public var maxAttempts: Int
        /// Delay before the first retry; doubles each time.
        public var initialBackoff: Duration

        public init(maxAttempts: Int = 4, initialBackoff: Duration = .milliseconds(100)) {
            self.maxAttempts = max(1, maxAttempts)
            self.initialBackoff = initialBackoff
        }

        /// No retries.
        public static let none = RetryPolicy(maxAttempts: 1)
    }

    /// `http://host:port`, without the API path.
    public let baseURL: String
    let token: String
    /// Per-request timeout.
    public var timeout: Duration
    public var retry: RetryPolicy
    /// The API version path.
    public var apiPath = "/services/data/v60.0"
    let http: HTTPClient
    let logger: Logger

    /// The HTTP client REST calls go through unless told otherwise. A server that cannot be
    /// reached fails fast: a refused connection at once, an unanswered one after 3 s (the
    /// shared client's browser-like 90 s connect timeout made a down server look like a sync
    /// `running` for minutes). Reads are bounded by each call's `timeout`.
    public static let defaultHTTPClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: .seconds(3))
        // Each call's own retry policy retries; the pool must not keep a request waiting for a
        // server that refuses connections.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(
        baseURL: String, token: String, timeout: Duration = .seconds(30), retry: RetryPolicy = RetryPolicy(),
        httpClient: HTTPClient = RESTClient.defaultHTTPClient, logger: Logger = Logger(label: "baton.rest")
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.timeout = timeout
        self.retry = retry
        self.http = httpClient
        self.logger = logger
    }

    /// One HTTP exchange: status and parsed JSON body (`.null` when empty).
    public struct Reply: Sendable {
        public var status: Int
        public var body: JSONValue
        /// The server's clock when it answered (its `Date` header, whole seconds, ms since
        /// 1970); nil when it sent none.
        public var serverTime: Int64?
    }

    /// Sends a request to `path` (absolute on the server, e.g. `/services/data/v60.0/query?q=…`).
    ///
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - path: the path (and query) on the server, appended to the base URL.
    ///   - body: sent as JSON (with `Content-Type: application/json`) when given.
    ///   - headers: extra request headers, added after `Authorization` and `Accept`.
    ///   - idempotent: retried on connection errors and 5xx when true.
    /// - Returns: the reply's status and parsed JSON body.
    /// - Throws: ``RESTError``; status ≥ 400 becomes `.server` with the Salesforce error code.
    public func send(
        _ method: HTTPMethod, _ path: String, body: JSONValue? = nil, headers: [(String, String)] = [],
        idempotent: Bool
    ) async throws -> Reply {
        try await send(method, path, body: body, headers: headers, idempotent: idempotent, shape: .any)
    }

    /// What a reply's body is parsed as.
    enum ReplyShape {
        case any
        /// A query page: its records come out without their `attributes` envelope.
        case queryPage
    }

    func send(
        _ method: HTTPMethod, _ path: String, body: JSONValue? = nil, headers: [(String, String)] = [],
        idempotent: Bool, shape: ReplyShape
    ) async throws -> Reply {
        var attempt = 1
        var backoff = retry.initialBackoff
        while true {
            do {
                return try await sendOnce(method, path, body: body, headers: headers, shape: shape)
            } catch let error as RESTError
                where idempotent && error.isRetryable && attempt < retry.maxAttempts
            {
                logger.debug(
                    "retrying REST call",
                    metadata: [
                        "baton.path": "\(Self.redacted(path))", "baton.attempt": "\(attempt)",
                        "baton.error": "\(error)",
                    ])
                attempt += 1
                do {
                    try await Task.sleep(for: backoff)
                } catch {
                    throw RESTError(.cancelled, "cancelled while waiting to retry")
                }
                backoff *= 2
            }
        }
    }

    func sendOnce(
        _ method: HTTPMethod, _ path: String, body: JSONValue?, headers: [(String, String)],
        shape: ReplyShape = .any
    ) async throws -> Reply {
        if Task.isCancelled { throw RESTError(.cancelled, "cancelled before sending") }
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body.jsonString))
        }
        let timeoutNanos = timeout.inNanoseconds
        let status: Int
        let buffer: ByteBuffer
        let serverTime: Int64?
        do {
            let response = try await http.execute(
                request, timeout: .nanoseconds(timeoutNanos), logger: logger)
            status = Int(response.status.code)
            serverTime = response.headers.first(name: "Date").flatMap(HTTPDate.milliseconds)
            buffer = try await response.body.collect(upTo: 64 * 1024 * 1024)
        } catch {
            throw Self.classify(error, method: method, path: path, server: baseURL)
        }
        let parsed: JSONValue
        if buffer.readableBytes == 0 {
            parsed = .null
        } else {
            do {
                switch shape {
                case .any: parsed = try JSONValue(parsing: buffer.readableBytesView)
                case .queryPage:
                    // Depth 1 is the page, 2 its records array, 3 each record.
                    parsed = try JSONValue(
                        parsing: buffer.readableBytesView, omitting: "attributes", atDepth: 3)
                }
            } catch {
                throw RESTError(
                    .malformedResponse,
                    "\(method) \(Self.redacted(path)): response is not JSON (HTTP \(status))")
            }
        }
        guard status < 400 else {
            let first = parsed.arrayValue?.first
            let code = first?.value(atPath: "errorCode")?.stringValue ?? "HTTP_\(status)"
            let message = first?.value(atPath: "message")?.stringValue ?? "HTTP \(status)"
            throw RESTError(.server(status: status, errorCode: code), message)
        }
        return Reply(status: status, body: parsed, serverTime: serverTime)
    }

    static func classify(_ error: any Error, method: HTTPMethod, path: String, server: String = "")
        -> RESTError
    {
        let what = "\(method) \(redacted(path))"
        if error is CancellationError || Task.isCancelled {
            return RESTError(.cancelled, "\(what): cancelled")
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled: return RESTError(.cancelled, "\(what): cancelled")
            case .connectTimeout:
                return RESTError(
                    .transport, "cannot reach \(server): no answer to the connection attempt",
                    unreachableForNow: true)
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return RESTError(.timeout, "\(what): no response in time")
            default: break
            }
        }
        if let cause = unreachable(error) {
            // Refused and reset connections are retried (a server restarting answers again soon);
            // the rest cost a connect timeout each or fail the same way again.
            let lasting = !cause.hasPrefix("connection refused") && !cause.hasPrefix("connection reset")
            return RESTError(.transport, "cannot reach \(server): \(cause)", unreachableForNow: lasting)
        }
        return RESTError(.transport, "\(what): \(error)")
    }

    /// Why a connection could not be made, in plain words, when the error says so.
    static func unreachable(_ error: any Error) -> String? {
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ECONNRESET: return "connection reset"
            case EHOSTUNREACH, ENETUNREACH: return "no route to the host"
            case ETIMEDOUT: return "no answer to the connection attempt"
            default: break
            }
        }
        let text = String(describing: error).lowercased()
        if text.contains("connection refused") { return "connection refused" }
        if text.contains("connection reset") { return "connection reset" }
        if text.contains("dns") || text.contains("name or service not known") || text.contains("unknown host")
        {
            return "the host name does not resolve"
        }
        if text.contains("handshake") || text.contains("certificate") || text.contains("ssl")
            || text.contains("tls")
        {
            return "the TLS handshake failed (\(String(describing: error).prefix(120)))"
        }
        return nil
    }

    /// The path without its query string, for logs and errors (a query may hold record data).
    static func redacted(_ path: String) -> String {
        path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
    }

    static func encode(_ component: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return component.addingPercentEncoding(withAllowedCharacters: allowed) ?? component
    }
}
