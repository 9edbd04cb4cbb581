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

    @Test("contention reports the lease, the busy timeout and the floor, and nothing else")
    func contentionFigures() throws {
        let lease = ProcessBench.Contention(writesPerSec: 5000, p50Ms: 1, p99Ms: 5, maxMs: 9, errors: 0)
        let busy = ProcessBench.Contention(writesPerSec: 8000, p50Ms: 0.1, p99Ms: 16, maxMs: 60, errors: 0)
        let floor = ProcessBench.Contention(writesPerSec: 6250, p50Ms: 1, p99Ms: 4, maxMs: 8, errors: 0)
        #expect(ProcessBench.contentionModes == ["lease", "busy", "floor"])
        let contention = BenchFigures.Contention(["lease": lease, "busy": busy, "floor": floor])
        #expect(contention.writesRatio == 0.625 && contention.fairVsFloor == 0.8)
        #expect(contention.floorThroughputRatio == 0.781 && contention.floorP99Ratio == 0.25)
        let figures = try #require(try JSONValue(encoding: contention).objectValue)
        #expect(
            Set(figures.keys) == [
                "batonWritesPerSec", "baselineWritesPerSec", "writesRatio", "throughputRatio", "batonErrors",
                "baselineErrors", "batonP50Ms", "batonP99Ms", "batonMaxMs", "baselineP50Ms", "baselineP99Ms",
                "baselineMaxMs", "p99Ratio", "floorWritesPerSec", "floorP50Ms", "floorP99Ms", "floorMaxMs",
                "floorThroughputRatio", "floorP99Ratio", "floorErrors", "fairVsFloor",
            ])
        let rows = BenchSuite.table(
            ["cores": 2, "records": 1000, "trials": 1, "contention": .object(figures)], waste: []
        )
        .filter { $0.hasPrefix("| contention") }
        #expect(rows.count == 4)
        #expect(rows.contains { $0.contains("strictly fair lease | 5000 | 8000 (busy timeout) | 0.625 |") })
        #expect(rows.contains { $0.contains("vs the bare kernel lock (its floor) | 5000 | 6250 | 0.8 |") })
        // Every figure a row names is there ("-" stands for a missing one).
        #expect(!rows.contains { $0.split(whereSeparator: { " ,;|".contains($0) }).contains("-") }, "\(rows)")
    }
}
