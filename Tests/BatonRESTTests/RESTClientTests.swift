import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Testing

@Suite("REST client")
struct RESTClientTests {
    @Test("query pages arrive lazily through the AsyncSequence")
    func pagingSequence() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 23)
            var sizes: [Int] = []
            for try await page in client.query("SELECT Id FROM Account", batchSize: 10) {
                sizes.append(page.records.count)
            }
            #expect(sizes == [10, 10, 3])
        }
    }

    @Test("a 503 then success: the idempotent call is retried and succeeds")
    func retries() async throws {
        try await withLiveServer(retry: .init(maxAttempts: 3, initialBackoff: .milliseconds(10))) {
            server, client in
            try await client.adminSeed(type: "Account", count: 3)
            try await client.adminSetFaults(["failNext": 1])
            let before = server.server.requestCount
            let page = try await client.queryFirstPage("SELECT Id FROM Account")
            #expect(page.totalSize == 3)
            #expect(server.server.requestCount - before == 2)
        }
    }

    @Test("retries are bounded")
    func boundedRetries() async throws {
        try await withLiveServer(retry: .init(maxAttempts: 3, initialBackoff: .milliseconds(5))) {
            server, client in
            try await client.adminSetFaults(["failNext": 10])
            let before = server.server.requestCount
            await #expect { try await client.queryFirstPage("SELECT Id FROM Account") } throws: {
                ($0 as? RESTError)?.status == 503
            }
            #expect(server.server.requestCount - before == 3)
        }
    }

    @Test("a create is not retried (it is not idempotent)")
    func createNotRetried() async throws {
        try await withLiveServer(retry: .init(maxAttempts: 3, initialBackoff: .milliseconds(5))) {
            server, client in
            try await client.adminSetFaults(["failNext": 1])
            let before = server.server.requestCount
            await #expect(throws: RESTError.self) {
                try await client.create(type: "Account", fields: ["Name": "x"])
            }
            #expect(server.server.requestCount - before == 1)
        }
    }

    @Test("cancelling the task cancels a request the server holds for 10 s", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        try await withLiveServer { server, client in
            try await client.adminSetFaults(["latencyMs": 10_000])
            let held = server.server.requestCount + 1
            let task = Task { try await client.queryFirstPage("SELECT Id FROM Account") }
            await server.server.waitForRequests(held)
            task.cancel()
            let result = await task.result
            #expect(throws: RESTError.self) { try result.get() }
            if case .failure(let error as RESTError) = result { #expect(error.kind == .cancelled) }
        }
    }
}
