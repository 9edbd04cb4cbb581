import BatonJSON
import BatonSync
import BatonTestSupport
import BatonTime
import Testing

@testable import BatonREST

@Suite("SOQL sync down target")
struct SoqlTargetTests {
    @Test("the first page is small (the first commit comes soon), the next ones have the batch size")
    func pageSizes() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 1200)
            let target = try SoqlSyncDownTarget(
                client: client, query: "SELECT Id, Name FROM Account", batchSize: 500)
            var page = try await target.startFetch(.everything)
            var sizes = [page.records.count]
            while let next = try await target.continueFetch(after: page) {
                sizes.append(next.records.count)
                page = next
            }
            #expect(sizes == [SoqlSyncDownTarget.firstPageSize, 500, 500])

            let small = try SoqlSyncDownTarget(client: client, query: "SELECT Id FROM Account", batchSize: 50)
            #expect(try await small.startFetch(.everything).records.count == 50)
        }
    }

    @Test("a query that counts records (SELECT COUNT()) is refused as a sync down target, naming why")
    func countRefused() throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        #expect {
            try SoqlSyncDownTarget(client: client, query: "SELECT COUNT() FROM Account")
        } throws: { error in
            (error as? SyncError)?.code == .invalidTarget && "\(error)".contains("COUNT()")
        }
        #expect {
            try SoqlSyncDownTarget(client: client, query: "SELECT MAX(LastModifiedDate) FROM Account")
        } throws: { error in
            (error as? SyncError)?.code == .invalidTarget && "\(error)".contains("aggregates")
        }
    }
}

@Suite("The server's clock as the client reads it")
struct ServerTimeTests {
    @Test("an HTTP Date is read as whole seconds; anything else is not a time")
    func httpDate() {
        #expect(HTTPDate.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777_000)
        #expect(HTTPDate.milliseconds("Sat, 28 Nov 2026 13:43:28 GMT") == 1_795_873_408_000)
        for bad in [
            "", "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun Nov  6 08:49:37 1994",
        ] {
            #expect(HTTPDate.milliseconds(bad) == nil, "\(bad)")
        }
    }

    @Test("a target's overlap comes from overlapSeconds, is checked, and round-trips")
    func overlapJSON() throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        let factory = RESTTargetFactory(client: client)
        let json: JSONObject = ["type": "soql", "query": "SELECT Id FROM Account", "overlapSeconds": 120]
        let target = try factory.syncDownTarget(from: json)
        #expect(target.overlap == .seconds(120))
        #expect(try factory.syncDownTarget(from: target.json).overlap == .seconds(120))
        let plain = try factory.syncDownTarget(from: ["type": "soql", "query": "SELECT Id FROM Account"])
        #expect(plain.overlap == SyncDownPosition.defaultOverlap)
        #expect(plain.json["overlapSeconds"] == nil)
        for bad: JSONValue in [-1, 86_401, "ten", 1.5] {
            var broken = json
            broken["overlapSeconds"] = bad
            #expect(throws: SyncError.self) { try factory.syncDownTarget(from: broken) }
        }
    }

    @Test("the server time comes from the Date of a request that touches no object")
    func fromDate() async throws {
        try await withLiveServer { server, client in
            let before = WallClock.nowMillis()
            let time = try #require(try await client.serverTime())
            let after = WallClock.nowMillis()
            #expect(time % 1000 == 0)
            // Hummingbird caches its Date and renews it once a second, later under load: it may
            // lag (which only makes the engine more careful), never lead.
            #expect(time >= before - 10_000 && time <= after)
            #expect(server.server.requestCount >= 1)
        }
    }
}
