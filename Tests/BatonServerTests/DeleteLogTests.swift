import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import SOQL
import Testing

/// `sObject Get Deleted` as Salesforce answers it: whole minutes, more than a minute apart, a
/// retention, a purge, writes in flight.
@Suite("The server's delete log")
struct DeleteLogTests {
    static let minute: Int64 = 60_000

    /// The start of the minute `millis` is in.
    static func minuteOf(_ millis: Int64) -> Int64 { millis - millis % minute }

    func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? RESTError)?.errorCode ?? "\(error)"
        }
    }

    @Test("ids deleted in a window, with their dates; seconds ignored; covered up to the server's minute")
    func window() async throws {
        let clock = ServerClockTests.HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let ids = try await client.adminSeed(type: "Account", count: 5)
            let start = clock.now
            try await client.delete(type: "Account", id: ids[0])
            _ = try await client.adminDelete(type: "Account", ids: [ids[1], ids[2]])
            let deletedAt = clock.now - clock.now % 1000
            clock.advance(3 * Self.minute)
            // `start` is later than the deletions, but in their minute: its seconds are
            // ignored, so they are answered.
            let answer = try await client.getDeleted(
                type: "Account", start: Self.minuteOf(deletedAt) + 59_000, end: clock.now)
            #expect(Set(answer.deleted.keys) == [ids[0], ids[1], ids[2]])
            #expect(answer.deleted.values.allSatisfy { $0 == deletedAt })
            #expect(answer.latestDateCovered == Self.minuteOf(clock.now))
            #expect(answer.earliestDateAvailable == Self.minuteOf(clock.now - 15 * 86_400_000))
            // A window before the deletions has none; the type is checked; other types apart.
            let before = try await client.getDeleted(
                type: "Account", start: start - 10 * Self.minute, end: start - 5 * Self.minute)
            #expect(before.deleted.isEmpty)
            let contacts = try await client.getDeleted(type: "Contact", start: start, end: clock.now)
            #expect(contacts.deleted.isEmpty)
            // The trailing-slash form Salesforce documents, with the offset percent-encoded.
            let raw = try await client.send(
                .GET,
                "/services/data/v60.0/sobjects/Account/deleted/?start=\(DateTimeLiteral.format(milliseconds: start).replacingOccurrences(of: "+", with: "%2B"))&end=\(DateTimeLiteral.format(milliseconds: clock.now).replacingOccurrences(of: "+", with: "%2B"))",
                idempotent: true)
            #expect(raw.body.value(atPath: "deletedRecords")?.arrayValue?.count == 3)
        }
    }

    @Test("a deletion in the server's current minute is answered once that minute has passed")
    func currentMinute() async throws {
        let clock = ServerClockTests.HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let ids = try await client.adminSeed(type: "Account", count: 1)
            let start = clock.now - 5 * Self.minute
            try await client.delete(type: "Account", id: ids[0])
            let now = try await client.getDeleted(
                type: "Account", start: start, end: clock.now + 5 * Self.minute)
            #expect(now.deleted.isEmpty)
            #expect(now.latestDateCovered == Self.minuteOf(clock.now))
            clock.advance(Self.minute)
            let later = try await client.getDeleted(
                type: "Account", start: now.latestDateCovered ?? start, end: clock.now + 5 * Self.minute)
            #expect(Array(later.deleted.keys) == [ids[0]])
        }
    }

    @Test(
        "INVALID_REPLICATION_DATE: a window of a minute or less, one before the retention, one before a purge"
    )
    func refusals() async throws {
        let clock = ServerClockTests.HandClock()
        try await withLiveServer(configure: {
            $0.timeSource = clock.source
            $0.deletedRetention = .seconds(3600)
        }) { _, client in
            let now = clock.now
            // 61 s apart, but whole minutes only one apart.
            let short = Self.minuteOf(now) - Self.minute + 59_000
            #expect(
                await code { _ = try await client.getDeleted(type: "Account", start: short, end: now) }
                    == "INVALID_REPLICATION_DATE")
            #expect(
                await code {
                    _ = try await client.getDeleted(type: "Account", start: now, end: now - Self.minute * 5)
                }
                    == "INVALID_REPLICATION_DATE")
            // Past the hour this server keeps.
            #expect(
                await code {
                    _ = try await client.getDeleted(type: "Account", start: now - 2 * 3_600_000, end: now)
                } == "INVALID_REPLICATION_DATE")
            #expect(
                await code {
                    _ = try await client.getDeleted(type: "Account", start: now - 30 * Self.minute, end: now)
                } == nil)
            // An administrator purges the log: earlier windows are refused, later ones answer.
            let ids = try await client.adminSeed(type: "Account", count: 2)
            _ = try await client.adminDelete(type: "Account", ids: [ids[0]], ageSeconds: 600)
            try await client.adminPurgeDeleted(type: "Account")
            #expect(
                await code {
                    _ = try await client.getDeleted(type: "Account", start: now - 30 * Self.minute, end: now)
                } == "INVALID_REPLICATION_DATE")
            // The purged id is still known as deleted to a call on it.
            #expect(
                await code {
                    _ = try await client.send(
                        .GET, "/services/data/v60.0/sobjects/Account/\(ids[0])", idempotent: true)
                } == "ENTITY_IS_DELETED")
            clock.advance(3 * Self.minute)
            try await client.delete(type: "Account", id: ids[1])
            clock.advance(2 * Self.minute)
            // Seconds ignored, a window must start at the first whole minute after the purge.
            #expect(
                await code { _ = try await client.getDeleted(type: "Account", start: now, end: clock.now) }
                    == "INVALID_REPLICATION_DATE")
            let after = try await client.getDeleted(
                type: "Account", start: Self.minuteOf(now) + Self.minute, end: clock.now)
            #expect(Array(after.deleted.keys) == [ids[1]])
            #expect(after.earliestDateAvailable == now)
            #expect(
                await code { _ = try await client.getDeleted(type: "Nope__c", start: now, end: clock.now) }
                    == "NOT_FOUND")
        }
    }

    @Test(
        "a held transaction keeps latestDateCovered at its minute, so a later commit lands in the next window"
    )
    func inFlight() async throws {
        let clock = ServerClockTests.HandClock()
        try await withLiveServer(configure: { $0.timeSource = clock.source }) { _, client in
            let ids = try await client.adminSeed(type: "Account", count: 2)
            let start = clock.now - 5 * Self.minute
            let held = try await client.adminBeginTransaction(
                type: "Account", ids: [ids[1]], fields: ["Name": "late"])
            let heldMinute = Self.minuteOf(clock.now)
            clock.advance(3 * Self.minute)
            try await client.delete(type: "Account", id: ids[0])
            clock.advance(2 * Self.minute)
            let answer = try await client.getDeleted(type: "Account", start: start, end: clock.now)
            #expect(answer.latestDateCovered == heldMinute)
            #expect(answer.deleted.isEmpty)
            _ = try await client.adminCommitTransaction(held.id)
            let next = try await client.getDeleted(
                type: "Account", start: answer.latestDateCovered ?? start, end: clock.now)
            #expect(Array(next.deleted.keys) == [ids[0]])
            #expect(next.latestDateCovered == Self.minuteOf(clock.now))
        }
    }
}
