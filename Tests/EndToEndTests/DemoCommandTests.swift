import BatonJSON
import BatonTestSupport
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("baton demo", .serialized)
    struct DemoCommandTests {
        @Test("the demo on 5,000 records passes every summary check and writes its report")
        func demo() async throws {
            let temp = try TemporaryDirectory()
            let report = temp.path + "/report.html"
            let result = try await BatonProcess.run(
                ["demo", "--records", "5000", "--json", "--report", report], timeout: .seconds(300))
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let summary = try JSONValue(parsing: result.stdout)
            #expect(summary.value(atPath: "passed") == true)
            let checks = summary.value(atPath: "checks")?.arrayValue ?? []
            #expect(checks.count >= 9)
            for check in checks {
                #expect(check.value(atPath: "passed") == true, "\(check.jsonString)")
            }
            let html = try String(contentsOfFile: report, encoding: .utf8)
            #expect(html.contains("<svg"))
            #expect(html.contains("all checks passed"))
            #expect(!html.contains("http://") && !html.contains("https://"))  // self-contained
        }

        @Test("bad options are refused before anything starts")
        func badOptions() async throws {
            let result = try await BatonProcess.run(["demo", "--records", "5"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("--records"))
        }
    }
}
