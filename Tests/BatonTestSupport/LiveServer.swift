import BatonJSON
import BatonREST
import BatonServer
import BatonTime
import Logging

/// A logger that stays quiet in tests (the server logs its own shutdown as an error).
public func quietLogger(_ label: String = "test") -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .critical
    return logger
}

/// Runs `body` against a fresh reference server on 127.0.0.1, port 0, and stops it after.
/// `configure` changes the server's configuration first (the token and schema are set).
@discardableResult
public func withLiveServer<T>(
    retry: RESTClient.RetryPolicy = .none, timeout: Duration = .seconds(30),
    configure: (inout ReferenceServer.Configuration) -> Void = { _ in },
    _ body: (RunningServer, RESTClient) async throws -> T
) async throws -> T {
    var configuration = ReferenceServer.Configuration(
        token: "test-token-\(UInt32.random(in: 0...UInt32.max))", schema: testSchema)
    configure(&configuration)
    let server = try await ReferenceServer.start(configuration, logger: quietLogger("test.server"))
    let client = RESTClient(baseURL: server.url, token: server.token, timeout: timeout, retry: retry)
    do {
        let result = try await body(server, client)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// The built-in schema plus the custom fields the tests' org has: `Ext__c` (an external id
/// besides Baton's) and `Industry__c` on Account and Contact.
public let testSchema: ServerSchema = {
    let custom: JSONValue = [
        "objects": [
            ["name": "Account", "fields": [["name": "Ext__c"], ["name": "Industry__c"]]],
            ["name": "Contact", "fields": [["name": "Ext__c"], ["name": "Industry__c"]]],
        ]
    ]
    do {
        return try ServerSchema(json: custom)
    } catch {
        fatalError("the test schema is invalid: \(error)")
    }
}()
