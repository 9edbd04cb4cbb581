import BatonCoordinator
import BatonHarness
import BatonStore
import Testing

@Suite("Lease report")
struct LeaseReportTests {
    @Test(
        "times are ISO 8601 in UTC with milliseconds",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (1_764_041_556_123, "2025-11-25T03:32:36.123Z"),
            (951_782_400_007, "2000-02-29T00:00:00.007Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
        ])
    func iso8601(millis: Int64, text: String) {
        #expect(WallClock.iso8601(millis: millis) == text)
    }

    @Test("the history table shows each interval's times as ISO 8601, and a held one as held")
    func table() {
        let lines = LeaseReport.table([
            LeaseRecord(
                epoch: 1, name: "host", pid: 10, acquired: 1_764_041_556_123, released: 1_764_041_557_000,
                releaseKind: "released"),
            LeaseRecord(
                epoch: 2, name: "ext", pid: 20, acquired: 1_764_041_557_001, released: nil, releaseKind: nil),
        ])
        #expect(lines.count == 3)
        #expect(
            lines[1].contains("2025-11-25T03:32:36.123Z") && lines[1].contains("2025-11-25T03:32:37.000Z"))
        #expect(lines[2].contains("2025-11-25T03:32:37.001Z") && lines[2].contains("held"))
    }

    static let fold = LeaseHistoryFold(
        firstEpoch: 1, lastEpoch: 900, intervals: 880, firstAcquired: 1_764_041_556_123,
        lastReleased: 1_764_041_557_000, commits: 1200, commitsOutsideLease: 1, violations: 1,
        strictViolations: 1,
        problems: [
            LeaseHistoryFold.Problem(7, "commit 12 by pid 4 while the lease was held by 'host' (pid 3)"),
            LeaseHistoryFold.Problem(
                8, "commit 13 by pid 5 while the lease was held by nobody", strictOnly: true),
        ])

    @Test("the folded intervals come first in the table, as one row that says what they held")
    func foldedRow() {
        let lines = LeaseReport.table(
            [
                LeaseRecord(
                    epoch: 901, name: "ext", pid: 20, acquired: 1_764_041_557_001, released: nil,
                    releaseKind: nil)
            ], folded: Self.fold)
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("1-900") && lines[1].contains("(folded)"))
        #expect(
            lines[1].contains("2025-11-25T03:32:36.123Z") && lines[1].contains("2025-11-25T03:32:37.000Z"))
        #expect(lines[1].contains("880 intervals, 1 violation(s), 1 outside any lease"))
        #expect(lines[2].hasPrefix("901"))
    }

    @Test("history --json puts the fold first, as {\"folded\": …}, then the intervals as they were")
    func foldedEntries() throws {
        let record = LeaseRecord(
            epoch: 901, name: "ext", pid: 20, acquired: 5, released: nil, releaseKind: nil)
        let json = try JSONValue(encoding: LeaseReport.entries([record], folded: Self.fold))
        let array = try #require(json.arrayValue)
        #expect(array.count == 2)
        #expect(array[0].value(atPath: "folded.lastEpoch") == 900)
        #expect(array[0].value(atPath: "folded.problems")?.arrayValue?.count == 2)
        #expect(array[1] == (try JSONValue(encoding: record)))
        #expect(
            try JSONValue(encoding: LeaseReport.entries([record], folded: nil))
                == JSONValue(encoding: [record]))
    }

    @Test(
        "lease check reports what the fold found: strict-only ones with --strict, and those not kept word for word"
    )
    func foldedViolationsReported() {
        let lenient = LeaseAudit.audit(history: [], commits: [], folded: Self.fold, strict: false)
        #expect(lenient.violations.map(\.epoch) == [7])
        var many = Self.fold
        many.violations = 5
        many.strictViolations = 3
        let strict = LeaseAudit.audit(history: [], commits: [], folded: many, strict: true)
        #expect(strict.violations.count == 3)
        #expect(
            strict.violations.last?.problem.contains(
                "6 more violation(s) among the folded intervals (epochs 1-900)") == true)
        let clean = LeaseHistoryFold(
            firstEpoch: 1, lastEpoch: 900, intervals: 880, firstAcquired: 0, lastReleased: 1, commits: 0,
            commitsOutsideLease: 0, violations: 0, strictViolations: 0, problems: [])
        #expect(LeaseAudit.audit(history: [], commits: [], folded: clean, strict: true).passed)
    }
}
