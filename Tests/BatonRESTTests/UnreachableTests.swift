import BatonJSON
import BatonREST
import Testing

@Suite("An unreachable server")
struct UnreachableTests {
    @Test("a refused connection fails the call, retries included, naming the server and the cause")
    func refused() async throws {
        // Port 1 on loopback: nothing listens there, so the kernel refuses at once.
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        await #expect {
            _ = try await client.queryFirstPage("SELECT Id FROM Account")
        } throws: { error in
            guard let error = error as? RESTError, case .transport = error.kind else { return false }
            return error.message == "cannot reach http://127.0.0.1:1: connection refused"
        }
    }
}

@Suite("A server that will not be reachable a moment later")
struct LastingUnreachableTests {
    @Test("a host name that does not resolve fails once, not retried, naming the server")
    func unresolvable() async throws {
        let client = RESTClient(baseURL: "http://no-such-host.invalid", token: "t")
        await #expect {
            _ = try await client.queryFirstPage("SELECT Id FROM Account")
        } throws: { error in
            guard let error = error as? RESTError, case .transport = error.kind else { return false }
            return error.message.hasPrefix("cannot reach http://no-such-host.invalid: ")
                && error.unreachableForNow
        }
    }

    @Test("a refused connection is retried by the call (a restarting server answers soon)")
    func refusedIsRetried() async throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        await #expect {
            _ = try await client.queryFirstPage("SELECT Id FROM Account")
        } throws: { error in
            guard let error = error as? RESTError else { return false }
            return !error.unreachableForNow
        }
    }
}
