import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Testing

@Suite("Server fault injection, as the client sees it")
struct FaultTests {
    @Test("an injected error is a 503 SERVER_UNAVAILABLE")
    func error() async throws {
        try await withLiveServer { _, client in
            try await client.adminSetFaults(["failNext": 1])
            await #expect {
                try await client.queryFirstPage("SELECT Id FROM Account")
            } throws: { error in
                let error = error as? RESTError
                return error?.status == 503 && error?.errorCode == "SERVER_UNAVAILABLE"
            }
            #expect(try await client.queryFirstPage("SELECT Id FROM Account").totalSize == 0)
        }
    }

    @Test("passNext lets that many data requests through before the counted faults start")
    func passNext() async throws {
        try await withLiveServer { _, client in
            try await client.adminSetFaults(["passNext": 2, "failNext": 1])
            for _ in 0..<2 {
                #expect(try await client.queryFirstPage("SELECT Id FROM Account").totalSize == 0)
            }
            await #expect {
                try await client.queryFirstPage("SELECT Id FROM Account")
            } throws: { ($0 as? RESTError)?.status == 503 }
            #expect(try await client.queryFirstPage("SELECT Id FROM Account").totalSize == 0)
        }
    }

    @Test("a connection dropped mid-response is a transport error")
    func droppedConnection() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 5)
            try await client.adminSetFaults(["dropConnectionNext": 1])
            await #expect {
                try await client.queryFirstPage("SELECT Id FROM Account")
            } throws: { error in
                guard let error = error as? RESTError else { return false }
                return error.kind == .transport || error.kind == .malformedResponse
            }
        }
    }

    @Test("a response dropped after commit loses the answer but keeps the write")
    func droppedAfterCommit() async throws {
        try await withLiveServer { _, client in
            try await client.adminSetFaults(["dropAfterCommitNext": 1])
            await #expect {
                try await client.upsert(type: "Account", field: "Ext__c", value: "k1", fields: ["Name": "n"])
            } throws: { error in
                guard let error = error as? RESTError else { return false }
                return error.kind == .transport || error.kind == .malformedResponse
            }
            let page = try await client.queryFirstPage("SELECT Id FROM Account WHERE Ext__c = 'k1'")
            #expect(page.totalSize == 1)
        }
    }

    @Test("added latency past the client's timeout is a timeout")
    func latency() async throws {
        try await withLiveServer { server, client in
            try await client.adminSetFaults(["latencyMs": 3000])
            let impatient = RESTClient(
                baseURL: server.url, token: server.token, timeout: .milliseconds(300), retry: .none)
            await #expect {
                try await impatient.queryFirstPage("SELECT Id FROM Account")
            } throws: { ($0 as? RESTError)?.kind == .timeout }
        }
    }

    @Test("the stats count injected faults and served records")
    func stats() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 12)
            _ = try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 5)
            try await client.adminSetFaults(["failNext": 1])
            _ = try? await client.queryFirstPage("SELECT Id FROM Account")
            let stats = try await client.adminStats()
            #expect(stats.value(atPath: "recordsServed.Account") == 5)
            #expect(stats.value(atPath: "faultsInjected.error") == 1)
        }
    }

    @Test("a write held after commit is counted as committed while its client still waits")
    func holdAfterCommit() async throws {
        try await withLiveServer { server, client in
            try await client.adminSetFaults(["holdAfterCommitMs": 10_000])
            let write = Task {
                try await client.upsert(type: "Account", field: "Ext__c", value: "k2", fields: ["Name": "n"])
            }
            // The record is on the server (and counted) while the response is being held.
            await server.server.waitForWritesCommitted(1)
            let watcher = RESTClient(baseURL: server.url, token: server.token)
            #expect(try await watcher.adminStats().value(atPath: "writesCommitted") == 1)
            #expect(
                try await watcher.queryFirstPage("SELECT Id FROM Account WHERE Ext__c = 'k2'").totalSize == 1)
            write.cancel()
            _ = try? await write.value
            let stats = try await watcher.adminStats()
            #expect(stats.value(atPath: "faultsInjected.holdAfterCommit") == 1)
        }
    }
}

@Suite("Fault settings from the admin API's body")
struct FaultSettingsBodyTests {
    @Test("named settings go over the defaults, rates cap at 1, the reply is the settings")
    func partialBody() async throws {
        try await withLiveServer { _, client in
            try await client.adminSetFaults(["latencyMs": 5, "errorRate": 3, "seed": 9])
            let reply = try await client.adminFaults()
            #expect(reply.value(atPath: "latencyMs") == 5)
            #expect(reply.value(atPath: "errorRate")?.doubleValue == 1)
            #expect(reply.value(atPath: "seed") == 9)
            #expect(reply.value(atPath: "failNext") == 0)
            try await client.adminClearFaults()
            let cleared = try await client.adminFaults()
            #expect(cleared.value(atPath: "latencyMs") == 0)
        }
    }

    @Test("a negative or non-numeric setting is a 400 naming it; a fraction where a count is meant too")
    func rejects() async throws {
        try await withLiveServer { _, client in
            for (body, field) in [
                (["failNext": -1] as JSONObject, "failNext"), (["errorRate": "high"], "errorRate"),
                (["latencyMs": 2.5], nil),
            ] {
                await #expect {
                    try await client.adminSetFaults(body)
                } throws: { error in
                    let error = error as? RESTError
                    return error?.status == 400
                        && (field.map { error?.message.contains($0) ?? false } ?? true)
                }
            }
            let after = try await client.adminFaults()
            #expect(after.value(atPath: "latencyMs") == 0, "nothing was applied")
        }
    }
}
