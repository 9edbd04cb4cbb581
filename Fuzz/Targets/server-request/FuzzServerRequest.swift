// The reference server's request handling: the request line and query string, the headers
// (`Authorization`, `Sforce-Query-Options`) and the JSON bodies of every data and composite
// route, sent to the router's responder in process (no sockets).
//
// Input: `METHOD PATH` on the first line, header lines up to an empty line, then the body. A
// request without an `Authorization` header gets the right bearer token, so most inputs reach
// the routes. `/admin` (fault settings: latency, dropped connections) is left out.
//
// Invariants: no answer is a server error (5xx); every error answer is Salesforce's shape, an
// array of objects with `errorCode` and `message` strings; every other answer with a body is
// JSON.
//
// The requests go to the responder directly, with one request context per server, rather than
// through HummingbirdTesting's router framework: that makes a test channel per request and
// never closes it, which leaks about 5 KB a request and ran a 10-minute campaign out of memory
// (found with `-detect_leaks=1`: every leaked object was the test channel's pipeline).
import BatonJSON
import Dispatch
import FuzzSupport
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded

@testable import BatonServer

let token = "fuzz-token"
/// A fresh server (and empty storage) every so many requests, so records created by earlier
/// inputs do not pile up.
let requestsPerServer = 5_000

struct Answer {
    var status: Int
    var body: [UInt8]
}

/// One server at a time and the context every request to it shares; the fuzzer's thread runs
/// each request on the concurrency pool and waits for its answer.
final class Driver: @unchecked Sendable {
    static let shared = Driver()
    private var responder: RouterResponder<BasicRequestContext>?
    private var context: BasicRequestContext?
    private var served = 0
    private let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    private let channel = NIOAsyncTestingChannel()

    private func startServer() {
        let server: ReferenceServer
        do {
            server = try ReferenceServer(configuration: .init(token: token), logger: logger)
            try server.seed(type: "Account", count: 25, timeStamps: 10)
            try server.seed(type: "Contact", count: 5)
        } catch {
            fatalError("the reference server did not start: \(error)")
        }
        responder = server.router().buildResponder()
        context = BasicRequestContext(source: .init(channel: channel, logger: logger))
        served = 0
    }

    func send(_ request: FuzzRequest) -> Answer {
        if responder == nil || served >= requestsPerServer { startServer() }
        served += 1
        guard let responder, let context else { fatalError("no server") }
        var head = HTTPRequest(
            method: request.method, scheme: "http", authority: "localhost", path: request.uri,
            headerFields: request.headers)
        if let body = request.body { head.headerFields[.contentLength] = String(body.readableBytes) }
        let hummingbirdRequest = Request(head: head, body: RequestBody(buffer: request.body ?? ByteBuffer()))
        let done = DispatchSemaphore(value: 0)
        let box = AnswerBox()
        Task {
            let response: Response
            do {
                response = try await responder.respond(to: hummingbirdRequest, context: context)
            } catch {
                // As the server does with an error no middleware turned into an answer.
                response = Response(status: .internalServerError)
            }
            let sink = ByteSink()
            try? await response.body.write(CollectingWriter(sink: sink))
            box.answer = Answer(status: response.status.code, body: sink.bytes)
            done.signal()
        }
        done.wait()
        return box.answer ?? Answer(status: 500, body: [])
    }
}

final class AnswerBox: @unchecked Sendable {
    var answer: Answer?
}

/// The response body's bytes, written by one task and read after it signalled.
final class ByteSink: @unchecked Sendable {
    var bytes: [UInt8] = []
}

/// Collects a response body (the writer is consumed by the body, so the bytes live in a sink).
struct CollectingWriter: ResponseBodyWriter {
    let sink: ByteSink
    func write(_ buffer: ByteBuffer) async throws { sink.bytes += buffer.readableBytesView }
    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(fuzzInput(data, size))
    guard let request = parseRequest(bytes) else { return 0 }
    let answer = Driver.shared.send(request)
    let status = answer.status
    let body = answer.body
    require(
        status < 500,
        "server error \(status) for \(request.method) \(request.uri.prefix(200)): \(String(decoding: body.prefix(300), as: UTF8.self))"
    )
    if status >= 400 {
        guard case .array(let errors)? = try? JSONValue(parsing: body, maxDepth: 8), !errors.isEmpty,
            errors.allSatisfy({
                $0.value(atPath: "errorCode")?.stringValue != nil
                    && $0.value(atPath: "message")?.stringValue != nil
            })
        else {
            fatalError(
                "error \(status) not in Salesforce's shape for \(request.method) \(request.uri.prefix(200)): \(String(decoding: body.prefix(300), as: UTF8.self))"
            )
        }
    } else if !body.isEmpty {
        require(
            (try? JSONValue(parsing: body, maxDepth: 64)) != nil,
            "a \(status) answer that is not JSON for \(request.uri.prefix(200))")
    }
    return 0
}

struct FuzzRequest {
    var method: HTTPRequest.Method
    var uri: String
    var headers: HTTPFields
    var body: ByteBuffer?
}

/// `METHOD PATH\nName: value\n...\n\nbody`; nil for an input that is not a request of that shape.
func parseRequest(_ bytes: [UInt8]) -> FuzzRequest? {
    var lines: [[UInt8]] = []
    var start = 0
    var bodyStart = bytes.count
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "\n") {
            let line = Array(bytes[start..<index])
            if line.isEmpty, !lines.isEmpty {
                bodyStart = index + 1
                break
            }
            lines.append(line)
            start = index + 1
        }
        index += 1
    }
    if index >= bytes.count, start < bytes.count { lines.append(Array(bytes[start...])) }
    guard let first = lines.first, let space = first.firstIndex(of: UInt8(ascii: " ")) else { return nil }
    let methodName = String(decoding: first[..<space], as: UTF8.self)
    guard ["GET", "POST", "PATCH", "DELETE", "PUT", "HEAD"].contains(methodName),
        let method = HTTPRequest.Method(methodName)
    else { return nil }
    let uri = String(decoding: first[(space + 1)...], as: UTF8.self)
    guard uri.hasPrefix("/"), !uri.lowercased().hasPrefix("/admin") else { return nil }
    var headers = HTTPFields()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
            let name = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self))
        else { continue }
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
        headers.append(HTTPField(name: name, value: value))
    }
    if headers[.authorization] == nil { headers[.authorization] = "Bearer \(token)" }
    let body = bodyStart < bytes.count ? ByteBuffer(bytes: bytes[bodyStart...]) : nil
    return FuzzRequest(method: method, uri: uri, headers: headers, body: body)
}

extension String {
    func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }
}
