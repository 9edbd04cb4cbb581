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

    @Test("a tree: spec makes a parent-children sync down and sync up, with Mobile Sync's JSON")
    func treeSpecs() throws {
        let tree = "tree:Account:Name,Industry:Contact:Contacts:contacts:AccountId:LastName, Email"
        let syncs = try SyncSpecs(
            downs: ["trees:accounts:\(tree):master-detail"], ups: ["trees-up:accounts:\(tree)"]
        ).syncs(client: client)
        try #require(syncs.count == 2)
        guard case .down(_, "accounts", let down, _, _) = syncs[0],
            case .up(_, "accounts", let up, _) = syncs[1]
        else {
            Issue.record("expected a sync down then a sync up on accounts, got \(syncs)")
            return
        }
        #expect(down is ParentChildrenSyncDownTarget && up is ParentChildrenSyncUpTarget)
        #expect(down.json["relationshipType"] == "MASTER_DETAIL" && up.json["relationshipType"] == "LOOKUP")
        #expect(down.json["parentFieldlist"] == ["Name", "Industry"])
        #expect(down.json["childrenFieldlist"] == ["LastName", "Email"])
        #expect(JSONValue.object(down.json).value(atPath: "parent.soupName") == "accounts")
        #expect(JSONValue.object(down.json).value(atPath: "children.soupName") == "contacts")
        #expect(JSONValue.object(up.json).value(atPath: "children.parentIdFieldName") == "AccountId")
        #expect(down.childrenSoup?.soupName == "contacts")

        for bad in [
            "x:s:tree:Account:Name:Contact:Contacts:contacts:AccountId",  // no child fields
            "x:s:\(tree):sideways", "x:contacts:\(tree)",
            "x:s:tree:Account:Name:Contact:Contacts:bad soup:AccountId:LastName",
        ] {
            #expect(throws: CLIError.self, "\(bad)") {
                try SyncSpecs(downs: [bad], ups: []).syncs(client: client)
            }
        }
        #expect(throws: CLIError.self) {
            try SyncSpecs(downs: [], ups: ["x:s:tree:Account:Name"]).syncs(client: client)
        }
    }
    @Test(
        "an option's sync the engine could not create is refused, naming the option and the part",
        arguments: [
            (
                ["bad name:accounts:SELECT Id FROM Account"], [String](), "--sync-down 'bad name:",
                "NAME: invalid sync name"
            ),
            (
                ["\(String(repeating: "n", count: 300)):accounts:SELECT Id FROM Account"], [], "--sync-down",
                "NAME: invalid sync name"
            ),
            (
                ["a:bad soup;:SELECT Id FROM Account"], [], "--sync-down 'a:bad soup;",
                "SOUP: invalid soup name"
            ),
            (["a:s:SELECT Id FORM Account"], [], "--sync-down: ", "not valid SOQL"),
            (["a:s:sosl:not a search"], [], "--sync-down: ", "not a valid SOSL search"),
            (
                ["a:s:sosl:FIND {x} RETURNING Account, Account"], [], "--sync-down: ",
                "each object must be distinct"
            ),
            (
                ["a:s:tree:Account:Name:Contact:Contacts:contacts:Account-Id:LastName"], [],
                "--sync-down 'a:s:tree",
                "PARENT_ID_FIELD: "
            ),
            (
                ["a:s:SELECT Id FROM Account"], ["bad up!:s"], "--sync-up 'bad up!:s'",
                "NAME: invalid sync name"
            ),
            (
                ["a:s:SELECT Id FROM Account", "a:t:SELECT Id FROM Contact"], [], "--sync-down 'a:t:",
                "NAME: the sync 'a' is given twice"
            ),
            (["a:s:SELECT Id FROM Account"], ["a:s"], "--sync-up 'a:s'", "given twice"),
        ])
    func refusedAsTheEngineWould(downs: [String], ups: [String], prefix: String, says: String) {
        #expect {
            try SyncSpecs(downs: downs, ups: ups).syncs(client: client)
        } throws: { error in
            guard let message = (error as? CLIError)?.message else { return false }
            return message.hasPrefix(prefix) && message.contains(says)
        }
    }
}
