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
}
