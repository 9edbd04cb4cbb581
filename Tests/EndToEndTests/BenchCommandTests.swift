import BatonJSON
import BatonTestSupport
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("baton bench", .serialized)
    struct BenchCommandTests {
        @Test("resume waste: a restarted sync refetches only the records on the boundary time stamp")
        func resumeWaste() async throws {
            let temp = try TemporaryDirectory()
            let json = temp.path + "/bench.json"
            let result = try await BatonProcess.run(
                ["bench", "--records", "2000", "--trials", "1", "--only", "waste", "--json", json],
                timeout: .seconds(300))
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let figures = try JSONValue(parsing: String(contentsOfFile: json, encoding: .utf8))
            let cases = figures.value(atPath: "resumeWaste.cases")?.arrayValue ?? []
            #expect(cases.count == 9)
            for item in cases {
                let extra = item.value(atPath: "extra")?.intValue ?? -1
                let ties = item.value(atPath: "boundaryTies")?.intValue ?? -1
                // At most the records sharing the boundary time stamp (fewer when some of them
                // were still missing at the stop).
                #expect(extra >= 0 && extra <= ties, "\(item.jsonString)")
            }
            #expect(result.stdout.contains("resume waste"))
            // Scenarios that did not run are left out, not reported as zeros.
            #expect(figures.value(atPath: "contention") == nil)
            #expect(figures.value(atPath: "ingest") == nil)
            #expect(!result.stdout.contains("contention"))
        }

        @Test("contention: 8 writer processes through the lease never see SQLITE_BUSY")
        func contention() async throws {
            let temp = try TemporaryDirectory()
            let json = temp.path + "/bench.json"
            let result = try await BatonProcess.run(
                ["bench", "--records", "1000", "--trials", "1", "--only", "contention", "--json", json],
                timeout: .seconds(300))
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let figures = try JSONValue(parsing: String(contentsOfFile: json, encoding: .utf8))
            #expect(figures.value(atPath: "contention.batonErrors")?.intValue == 0)
            #expect((figures.value(atPath: "contention.batonWritesPerSec")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.baselineWritesPerSec")?.doubleValue ?? 0) > 0)
            #expect((figures.value(atPath: "contention.batonP99Ms")?.doubleValue ?? 0) > 0)
            #expect(result.stdout.contains("| contention, p99 write latency ms |"))
        }

        @Test("an unknown scenario is refused")
        func unknownScenario() async throws {
            let result = try await BatonProcess.run(["bench", "--only", "speed"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("unknown scenario"))
        }
    }
}
