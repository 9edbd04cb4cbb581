import BatonJSON
import Testing

@testable import BatonHarness

@Suite("bench statistics")
struct BenchStatsTests {
    @Test("percentiles by nearest rank")
    func percentiles() {
        let hundred = (1...100).map(Double.init).shuffled()
        #expect(BenchStats.percentile(hundred, 50) == 50)
        #expect(BenchStats.percentile(hundred, 99) == 99)
        #expect(BenchStats.percentile(hundred, 100) == 100)
        #expect(BenchStats.percentile(hundred, 0) == 1)
        // Of 10 samples the nearest-rank p99 is the maximum.
        let ten = (1...10).map(Double.init)
        #expect(BenchStats.percentile(ten, 99) == 10)
        #expect(BenchStats.percentile(ten, 50) == 5)
        #expect(BenchStats.percentile([], 99) == 0)
        #expect(BenchStats.percentile([7], 1) == 7)
    }

    @Test("rounding and durations")
    func rounding() {
        #expect(BenchStats.round(12.345) == 12.3)
        #expect(BenchStats.round(12.345, 100) == 12.35 || BenchStats.round(12.345, 100) == 12.34)
        #expect(BenchStats.round(-0.05, 10) == -0.1 || BenchStats.round(-0.05, 10) == 0)
        #expect(BenchStats.seconds(.milliseconds(1500)) == 1.5)
        #expect(BenchStats.seconds(.seconds(2) + .microseconds(250)) == 2.00025)
    }

    @Test("the table calls a tail of fewer than 100 trials the max, and leaves out what did not run")
    func table() {
        let few: JSONObject = [
            "cores": 2, "records": 1000, "trials": 10,
            "stop": ["p50Ms": 3.5, "maxMs": 9.0, "inFlightP50Ms": 4.0, "inFlightMaxMs": 11.0, "trials": 10],
        ]
        let lines = BenchSuite.table(few, waste: [])
        #expect(lines.contains { $0.contains("stop latency p50 / max") && $0.contains("| 3.5 / 9 |") })
        #expect(!lines.contains { $0.contains("ingest") || $0.contains("contention") })

        var many = few
        many["stop"] = [
            "p50Ms": 3.5, "p99Ms": 8.0, "inFlightP50Ms": 4.0, "inFlightP99Ms": 10.0, "trials": 100,
        ]
        #expect(
            BenchSuite.table(many, waste: []).contains {
                $0.contains("stop latency p50 / p99") && $0.contains("| 3.5 / 8 |")
            })
    }
}
