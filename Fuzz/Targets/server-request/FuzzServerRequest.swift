// The reference server's request handling: the request line and query string, the headers
// (`Authorization`, `Sforce-Query-Options`) and the JSON bodies of every data and composite
// route, sent to the router in process (Hummingbird's router test framework: no sockets).
//
// Input: `METHOD PATH` on the first line, header lines up to an empty line, then the body. A
// request without an `Authorization` header gets the right bearer token, so most inputs reach
// the routes. `/admin` (fault settings: latency, dropped connections) is left out.
//
// Invariants: no answer is a server error (5xx); every error answer is Salesforce's shape, an
// array of objects with `errorCode` and `message` strings; every other answer with a body is
// JSON.
import BatonJSON
import Dispatch
import FuzzSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore

@testable import BatonServer

let token = "fuzz-token"
/// A fresh server (and empty storage) every so many requests, so records created by earlier
/// inputs do not pile up.
let requestsPerServer = 5_000

struct Job: Sendable {
    let method: HTTPRequest.Method
    let uri: String
    let headers: HTTPFields
    let body: ByteBuffer?
    let answer: @Sendable (TestResponse?) -> Void
}

/// Runs a router test session per server on the concurrency pool; the fuzzer's thread hands it
/// one request at a time and waits for the answer.
final class Driver: @unchecked Sendable {
    static let shared = Driver()
    var jobs: AsyncStream<Job>.Continuation?
    var served = 0

    func startServer() {
        jobs?.finish()
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self)
        jobs = continuation
        served = 0
        let started = DispatchSemaphore(value: 0)
        Task {
            let server = try ReferenceServer(
                configuration: .init(token: token),
                logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
            try server.seed(type: "Account", count: 25, timeStamps: 10)
            try server.seed(type: "Contact", count: 5)
            let app = Application(router: server.router())
            try await app.test(.router) { client in
                started.signal()
                for await job in stream {
                    let response = try? await client.executeRequest(
                        uri: job.uri, method: job.method, headers: job.headers, body: job.body)
                    job.answer(response)
                }
            }
        }
        started.wait()
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, _ headers: HTTPFields, _ body: ByteBuffer?)
        -> TestResponse?
    {
        if jobs == nil || served >= requestsPerServer { startServer() }
        served += 1
        let done = DispatchSemaphore(value: 0)
        let box = ResponseBox()
        jobs?.yield(
            Job(method: method, uri: uri, headers: headers, body: body) { response in
                box.response = response
                done.signal()
            })
        done.wait()
        return box.response
    }
}

final class ResponseBox: @unchecked Sendable {
    var response: TestResponse?
}

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(fuzzInput(data, size))
    guard let request = parseRequest(bytes) else { return 0 }
    guard let response = Driver.shared.send(request.method, request.uri, request.headers, request.body) else {
        return 0
    }
    let status = response.status.code
    require(
        status < 500,
        "server error \(status) for \(request.method) \(request.uri.prefix(200)): \(String(buffer: response.body).prefix(300))"
    )
    let body = Array(response.body.readableBytesView)
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
