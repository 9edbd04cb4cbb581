import BatonJSON
import BatonTestSupport
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("baton bench", .serialized)
    struct BenchCommandTests {
        /// Runs `baton bench --only SCENARIO` and returns its stdout and its `--json` figures.
        func bench(_ scenario: String, records: Int) async throws -> (stdout: String, figures: JSONValue) {
            let temp = try TemporaryDirectory()
            let json = temp.path + "/bench.json"
            let result = try await BatonProcess.run(
                ["bench", "--records", String(records), "--trials", "1", "--only", scenario, "--json", json],
                timeout: .seconds(300))
            #expect(result.status == 0, "stderr: \(result.stderr)")
            return (result.stdout, try JSONValue(parsing: String(contentsOfFile: json, encoding: .utf8)))
        }

        @Test("resume waste: a restarted sync fetches nothing it saved, however many records share a stamp")
        func resumeWaste() async throws {
            let (stdout, figures) = try await bench("waste", records: 2000)
            let cases = figures.value(atPath: "resumeWaste.cases")?.arrayValue ?? []
            #expect(cases.count == 9)
            for item in cases {
                // The resume asks for the ids after the last one saved: with 1, 10 or 100
                // records per time stamp, nothing saved comes again.
                #expect(item.value(atPath: "extra")?.intValue == 0, "\(item.jsonString)")
            }
            #expect(stdout.contains("resume waste"))
            // Scenarios that did not run are left out, not reported as zeros.
            #expect(figures.value(atPath: "contention") == nil)
            #expect(figures.value(atPath: "ingest") == nil)
            #expect(!stdout.contains("contention"))
        }

        @Test("incremental: each run fetches what changed, plus the overlap's edits again, on both clocks")
        func incremental() async throws {
            let (stdout, figures) = try await bench("incremental", records: 2000)
            let runs = figures.value(atPath: "incremental.runs")?.arrayValue ?? []
            #expect(runs.count == 12)  // five runs after a change and one idle, on each clock
            for run in runs {
                let changed = run.value(atPath: "changed")?.intValue ?? -1
                let fetched = run.value(atPath: "fetched")?.intValue ?? -1
                // Never less than what changed: the bench also checks the store equals the server.
                #expect(fetched >= changed && changed >= 0, "\(run.jsonString)")
            }
            // Runs seconds apart fetch the earlier runs' changes again (all within the overlap).
            for clock in ["salesforce", "ideal"] {
                let ratio = figures.value(atPath: "incremental.\(clock).fetchedPerChanged")?.doubleValue ?? 0
                #expect(ratio > 1, "\(clock)")
                #expect((figures.value(atPath: "incremental.\(clock).idleFetched")?.intValue ?? 0) > 0)
            }
            #expect(stdout.contains("| incremental run | clock |"))
        }

        @Test(
            "contention: 8 writer processes through the lease never see SQLITE_BUSY; the three modes are reported"
        )
        func contention() async throws {
            let (stdout, figures) = try await bench("contention", records: 1000)
            #expect(figures.value(atPath: "contention.batonErrors")?.intValue == 0)
            #expect((figures.value(atPath: "contention.batonWritesPerSec")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.baselineWritesPerSec")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.batonP99Ms")?.doubleValue ?? 0) > 0)
            #expect(figures.value(atPath: "contention.floorErrors")?.intValue == 0)
            #expect((figures.value(atPath: "contention.floorWritesPerSec")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.floorThroughputRatio")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.fairVsFloor")?.doubleValue ?? 0) > 0)
            // Exactly the three modes' figures: the lease ("baton"), the busy timeout
            // ("baseline") and the floor.
            let keys = Set((figures.value(atPath: "contention")?.objectValue ?? [:]).keys)
            let expected: Set = [
                "batonWritesPerSec", "baselineWritesPerSec", "writesRatio", "throughputRatio", "batonErrors",
                "baselineErrors", "batonP50Ms", "batonP99Ms", "batonMaxMs", "baselineP50Ms", "baselineP99Ms",
                "baselineMaxMs", "p99Ratio", "floorWritesPerSec", "floorP50Ms", "floorP99Ms", "floorMaxMs",
                "floorThroughputRatio", "floorP99Ratio", "floorErrors", "fairVsFloor",
            ]
            #expect(keys == expected, "\(keys.symmetricDifference(expected).sorted())")
            #expect(stdout.contains("| contention, committed writes/s (8 processes): strictly fair lease |"))
            #expect(stdout.contains("| contention, write latency ms p50 / p99 / max: fair lease |"))
            #expect(stdout.contains("| contention, errors (SQLITE_BUSY): fair lease |"))
            for removed in ["bounded", "guarded", "longer turns"] {
                #expect(!stdout.contains(removed), "\(removed)")
            }
        }

        @Test("stop and hand-over: a tail of fewer than 100 trials is called the max, never a p99")
        func lifecycleTail() async throws {
            let (stdout, figures) = try await bench("lifecycle", records: 1000)
            #expect(figures.value(atPath: "stop.trials")?.intValue == 1)
            #expect(figures.value(atPath: "stop.maxMs")?.doubleValue != nil)
            #expect(figures.value(atPath: "stop.p99Ms") == nil)
            #expect(figures.value(atPath: "handover.firstPageMaxMs")?.doubleValue != nil)
            // Each stop case ran and is reported: a request alone, with a page save, and cut.
            for stopCase in ["requestOnly", "inFlight", "inFlightCut"] {
                #expect(figures.value(atPath: "stop.\(stopCase)MaxMs")?.doubleValue != nil, "\(stopCase)")
            }
            #expect(stdout.contains("| stop latency p50 / max, ms (1 trials;"), "\(stdout)")
            #expect(stdout.contains("with a request in flight: "), "\(stdout)")
        }

        @Test("ingest: every record saved, end to end and through the store, with their baselines")
        func ingest() async throws {
            let (stdout, figures) = try await bench("ingest", records: 2000)
            for key in ["endToEndPerSec", "storePerSec", "rawPerSec", "grdbPerSec", "fetchPerSec"] {
                #expect((figures.value(atPath: "ingest.\(key)")?.doubleValue ?? 0) > 0, "\(key)")
            }
            #expect(stdout.contains("ingest"), "\(stdout)")
        }

        @Test("readers: a reader process hears of every committed page")
        func readers() async throws {
            let (stdout, figures) = try await bench("readers", records: 1000)
            let heard = figures.value(atPath: "readers.notifications")?.intValue ?? 0
            let coalesced = figures.value(atPath: "readers.coalesced")?.intValue ?? -1
            #expect(heard + coalesced == 200)
            #expect(heard > 0)
            #expect((figures.value(atPath: "readers.notifyP99Ms")?.doubleValue ?? 0) > 0)
            #expect(figures.value(atPath: "readers.fromWriteStartP99Ms")?.doubleValue != nil)
            #expect(stdout.contains("| readers: page committed"))
        }

        @Test("an unknown scenario is refused")
        func unknownScenario() async throws {
            let result = try await BatonProcess.run(["bench", "--only", "speed"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("unknown scenario"))
        }
    }
}
