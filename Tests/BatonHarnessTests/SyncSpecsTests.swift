import BatonHarness
import BatonREST
import BatonStore
import BatonSync
import Testing

@Suite("--sync-down and --sync-up specs")
struct SyncSpecsTests {
    let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")

    @Test("TARGET is SOQL or one of Mobile Sync's other target types")
    func targetTypes() throws {
        var specs = SyncSpecs(
            downs: [
                "accounts:accounts:SELECT Id, Name FROM Account WHERE CreatedDate > 2024-01-01T00:00:00Z",
                "found:found:sosl:FIND {Acme} RETURNING Account(Id, Name)",
                "recent:recent:mru:Account:Id, Name",
                "again:accounts2:refresh:Account:Id,Name", "meta:meta:metadata:Account",
                "compact:layouts:layout:Account:Compact",
            ],
            ups: ["up:accounts"])
        specs.batchSize = 100
        let syncs = try specs.syncs(client: client)
        func target(_ name: String) -> JSONObject? {
            for sync in syncs {
                if case .down(name, _, let target, _, _) = sync { return target.json }
            }
            return nil
        }
        #expect(target("accounts")?["type"] == "soql")
        #expect(target("found")?["query"] == "FIND {Acme} RETURNING Account(Id, Name)")
        #expect(target("recent")?["fieldlist"] == ["Id", "Name"])
        #expect(target("again")?["soupName"] == "accounts2")
        #expect(target("meta")?["sobjectType"] == "Account")
        #expect(target("compact")?["layoutType"] == "Compact")
        // The sync up takes its object from the SOQL sync down on its soup.
        #expect(syncs.count == 7)

        for bad in ["x:s:mru:Account", "x:s:metadata:", "x:s:layout:Account:Huge!"] {
            #expect(throws: CLIError.self, "\(bad)") {
                try SyncSpecs(downs: [bad], ups: []).syncs(client: client)
            }
        }
    }
}
