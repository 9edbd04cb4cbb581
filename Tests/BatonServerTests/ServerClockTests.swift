import BatonJSON
import BatonLocking
import BatonREST
import BatonServer
import BatonTestSupport
import BatonTime
import SOQL
import Testing

/// The reference server stamps as Salesforce does by default (whole seconds, one stamp for a
/// transaction, commits that land late), and as an ideal clock on request.
@Suite("The server's clock")
struct ServerClockTests {
    /// A time source a test moves by hand.
    final class HandClock: Sendable {
        let time: Locked<Int64>

        init() {
            let now = WallClock.nowMillis()
            time = Locked(now - now % 1000 + 250)
        }

        var source: @Sendable () -> Int64 { { [time] in time.withLock { $0 } } }
        func advance(_ ms: Int64) { time.withLock { $0 += ms } }
        var now: Int64 { time.withLock { $0 } }
    }

    func stamps(_ client: RESTClient, _ ids: [String]) async throws -> [String: Int64] {
        var out: [String: Int64] = [:]
        for record in try await client.adminRecords(type: "Account") {
            guard let id = record["Id"]?.stringValue, ids.contains(id) else { continue }
            out[id] = DateTimeLiteral.milliseconds(record["LastModifiedDate"]?.stringValue ?? "")
        }
        return out
    }

    @Test("Salesforce's clock: whole seconds, one stamp for every record of a request")
    func wholeSecondsOneStampPerRequest() async throws {
        let clock = HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let created = try await client.compositeCreate(
                type: "Account", records: (0..<5).map { ["Name": .string("A\($0)")] }, allOrNone: true)
            let ids = created.compactMap(\.id)
            clock.advance(400)
            let single = try await client.create(type: "Account", fields: ["Name": "B"])
            let all = try await stamps(client, ids + [single])
            #expect(Set(ids.map { all[$0] }) == [clock.now - clock.now % 1000])
            #expect(all.values.allSatisfy { $0 % 1000 == 0 })
            #expect(all[single] == all[ids[0]])  // the same second, 400 ms later
            clock.advance(1000)
            try await client.adminTouch(type: "Account", ids: ids, fields: ["Name": "bulk"])
            let touched = try await stamps(client, ids)
            #expect(Set(touched.values).count == 1)
            #expect(touched[ids[0]] == (try #require(all[ids[0]])) + 1000)
        }
    }

    @Test("Salesforce's clock: SOQL compares stamps ignoring milliseconds")
    func comparisonsIgnoreMilliseconds() async throws {
        let clock = HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let id = try await client.create(type: "Account", fields: ["Name": "A"])
            let stamp = try #require(try await stamps(client, [id])[id])
            func count(_ op: String, _ millis: Int64) async throws -> Int {
                try await client.queryFirstPage(
                    "SELECT Id FROM Account WHERE LastModifiedDate \(op) \(DateTimeLiteral.format(milliseconds: millis))"
                ).totalSize
            }
            // 900 ms after the stamp is the same second, as Salesforce compares.
            #expect(try await count(">=", stamp + 900) == 1)
            #expect(try await count("=", stamp + 900) == 1)
            #expect(try await count(">", stamp + 900) == 0)
            #expect(try await count(">", stamp - 1) == 1)
        }
    }

    @Test("the ideal clock: a unique, increasing millisecond for each record")
    func idealClock() async throws {
        let clock = HandClock()
        try await withLiveServer(configure: {
            $0.clock = .ideal; $0.timeSource = clock.source
        }) { _, client in
            let created = try await client.compositeCreate(
                type: "Account", records: (0..<5).map { ["Name": .string("A\($0)")] }, allOrNone: true)
            let ids = created.compactMap(\.id)
            let all = try await stamps(client, ids)
            #expect(Set(all.values).count == 5)
            #expect(ids.map { all[$0]! } == ids.map { all[$0]! }.sorted())
            // A literal's milliseconds count on this clock.
            let first = all[ids[0]]!
            let page = try await client.queryFirstPage(
                "SELECT Id FROM Account WHERE LastModifiedDate > \(DateTimeLiteral.format(milliseconds: first))"
            )
            #expect(page.totalSize == 4)
        }
    }

    @Test("a held transaction is stamped when it begins and visible only once it commits")
    func heldTransaction() async throws {
        let clock = HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let ids = try await client.adminSeed(type: "Account", count: 4, ageSeconds: 3600)
            let began = clock.now - clock.now % 1000
            let held = try await client.adminBeginTransaction(
                type: "Account", ids: [ids[0]], create: 2, fields: ["Name": "late"])
            #expect(held.ids == [ids[0]])
            #expect(held.stamp.flatMap(DateTimeLiteral.milliseconds) == began)
            clock.advance(5000)
            try await client.adminTouch(type: "Account", ids: [ids[1]], fields: ["Name": "later"])
            // Not visible yet: the old name, no new records.
            let before = try await client.queryFirstPage("SELECT Id, Name FROM Account")
            #expect(before.totalSize == 4)
            #expect(before.records.first { $0["Id"]?.stringValue == ids[0] }?["Name"] != "late")
            let written = try await client.adminCommitTransaction(held.id)
            #expect(written.count == 3)
            let after = try await stamps(client, written + [ids[1]])
            // Older than the record changed after it began, yet visible only now.
            #expect(written.allSatisfy { after[$0] == began })
            #expect(after[ids[1]] == began + 5000)
            // Committed once; a rolled-back one writes nothing.
            await #expect(throws: RESTError.self) { try await client.adminCommitTransaction(held.id) }
            let dropped = try await client.adminBeginTransaction(
                type: "Account", ids: [ids[2]], fields: ["Name": "x"])
            try await client.adminRollbackTransaction(dropped.id)
            #expect(try await client.get(type: "Account", id: ids[2])?["Name"] != "x")
        }
    }

    @Test("commitDelayMs: a write stamped when it starts is visible after one stamped later")
    func commitDelay() async throws {
        let clock = HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { server, client in
            let ids = try await client.adminSeed(type: "Account", count: 2, ageSeconds: 3600)
            try await client.adminSetFaults(["commitDelayMs": 10_000])
            let requests = server.server.requestCount
            async let slow: Void = client.update(type: "Account", id: ids[0], fields: ["Name": "slow"])
            // Once the slow write is in (and stamped), the clock moves on and the faults go.
            await server.server.waitForRequests(requests + 1)
            await server.server.waitForFaultsInjected(1)
            let stampedAt = clock.now - clock.now % 1000
            clock.advance(3000)
            try await client.adminClearFaults()
            try await client.update(type: "Account", id: ids[1], fields: ["Name": "fast"])
            #expect(try await client.get(type: "Account", id: ids[0])?["Name"] != "slow")
            #expect(try await client.get(type: "Account", id: ids[1])?["Name"] == "fast")
            _ = try await slow
            let all = try await stamps(client, ids)
            #expect(all[ids[0]] == stampedAt)
            #expect(all[ids[1]] == stampedAt + 3000)
        }
    }
}
