import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("baton participant --syncs-config", .timeLimit(.minutes(3)))
struct SyncsConfigProcessTests {
    @Test("a malformed file is a usage error naming its line and field, before the store is made")
    func malformed() async throws {
        let temp = try TemporaryDirectory()
        let file = temp.path + "/usersyncs.json"
        try #"""
        {"syncs": [
          {"syncName": "contacts", "syncType": "syncDown", "soupName": "contacts",
           "target": {"type": "soql", "query": "SELECT Id, LastName FROM Contact"},
           "options": {"mergeMode": "SOMETIMES"}}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        let dir = temp.path + "/shared"
        let result = try await BatonProcess.run(
            [
                "participant", "--dir", dir, "--name", "host", "--role", "host", "--server",
                "http://127.0.0.1:9",
                "--token", "t", "--syncs-config", file,
            ])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("usersyncs.json:4: syncs[0].options.mergeMode"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/store.sqlite"))
    }

    /// Issue 53's configs and spec that passed the check at start and then held the lease,
    /// retried forever: each argument is a file's sync (or a `--sync-down`), and what the error
    /// names.
    static let refused: [(sync: String, option: String?, names: String)] = [
        (
            #"{"syncName": "bad name!", "syncType": "syncDown", "soupName": "accounts", "target": {"type": "soql", "query": "SELECT Id FROM Account"}}"#,
            nil, "usersyncs.json:2: syncs[0].syncName: invalid sync name"
        ),
        (
            #"{"syncName": "\#(String(repeating: "n", count: 300))", "syncType": "syncDown", "soupName": "accounts", "target": {"type": "soql", "query": "SELECT Id FROM Account"}}"#,
            nil, "usersyncs.json:2: syncs[0].syncName: invalid sync name"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "bad soup;", "target": {"type": "soql", "query": "SELECT Id FROM Account"}}"#,
            nil, "usersyncs.json:2: syncs[0].soupName: invalid soup name"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "s", "target": {"type": "soql", "query": "SELECT Id FROM Account", "batchSize": "200"}}"#,
            nil, "usersyncs.json:2: syncs[0].target.batchSize: \"200\" is not a whole number"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "s", "target": {"type": "soql", "qurey": "SELECT Id FROM Account"}}"#,
            nil, "usersyncs.json:2: syncs[0].target.qurey: unknown key"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "s", "target": {"type": "soql", "query": "SELECT Id FROM Account", "idFieldName": 7}}"#,
            nil, "usersyncs.json:2: syncs[0].target.idFieldName: 7 is not a string"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "s", "soupName": "t", "target": {"type": "soql", "query": "SELECT Id FROM Account"}}"#,
            nil, "usersyncs.json:2: syncs[0].soupName: the key is given twice"
        ),
        (
            #"{"syncName": "a", "syncType": "syncDown", "soupName": "s", "target": {"type": "sosl", "query": "not a search"}}"#,
            nil, "usersyncs.json:2: syncs[0].target: the sync down query is not a valid SOSL search"
        ),
        (
            "", "bad name:accounts:SELECT Id FROM Account",
            "--sync-down 'bad name:accounts:SELECT Id FROM Account': NAME: invalid sync name"
        ),
    ]

    @Test(
        "a config or spec the writer could not run is a usage error naming the field; no participant starts",
        arguments: 0..<refused.count)
    func refusedAtStart(_ index: Int) async throws {
        let (sync, option, names) = Self.refused[index]
        let temp = try TemporaryDirectory()
        let file = temp.path + "/usersyncs.json"
        try "{\"syncs\": [\n  \(sync)\n]}\n".write(toFile: file, atomically: true, encoding: .utf8)
        let dir = temp.path + "/shared"
        let result = try await BatonProcess.run(
            [
                "participant", "--dir", dir, "--name", "host", "--role", "host", "--server",
                "http://127.0.0.1:9", "--token", "t",
            ] + (option.map { ["--sync-down", $0] } ?? ["--syncs-config", file]))
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(names), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/participants/host.json"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/store.sqlite"))
    }

    @Test("the writer creates and runs the file's syncs after its options' ones")
    func runsConfiguredSyncs() async throws {
        let f = try await CoordinatorFixture(records: 10)
        try await f.client.adminSeed(type: "Contact", count: 7, fields: ["LastName": "Seeded"])
        let file = f.temp.path + "/usersyncs.json"
        try #"""
        {"syncs": [
          {"syncName": "contactsDown", "syncType": "syncDown", "soupName": "contacts",
           "target": {"type": "soql", "query": "SELECT Id, LastName FROM Contact"},
           "options": {"mergeMode": "OVERWRITE"}},
          {"syncName": "contactsUp", "syncType": "syncUp", "soupName": "contacts",
           "target": {"createFieldlist": ["LastName"]},
           "options": {"mergeMode": "LEAVE_IF_CHANGED"}}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        try await f.start("host", role: "host", lifecycle: "foreground", extra: ["--syncs-config", file])
        #expect(
            try await f.wait([
                "--sync", "accounts=done", "--sync", "contactsDown=done", "--sync", "contactsUp=done",
            ]))
        let down = try #require(try await f.syncState("contactsDown"))
        #expect(down.value(atPath: "totalSize") == 7)
        #expect(down.value(atPath: "soup") == "contacts")
        #expect(try await f.syncState("contactsUp")?.value(atPath: "type") == "syncUp")
        try await f.finish()
    }

    @Test("a hand-over in the middle of a parent-children sync down loses and duplicates nothing")
    func parentChildrenHandOver() async throws {
        let f = try await CoordinatorFixture(records: 0)
        let accountIds = try await f.client.adminSeed(type: "Account", count: 300)
        var contactParent: [String: String] = [:]
        for start in stride(from: 0, to: accountIds.count, by: 100) {
            let parents = accountIds[start..<min(accountIds.count, start + 100)]
            let records: [JSONObject] = parents.flatMap { id in
                (0..<2).map { n in ["LastName": .string("Contact \(n) of \(id)"), "AccountId": .string(id)] }
            }
            let results = try await f.client.compositeCreate(type: "Contact", records: records)
            for (record, result) in zip(records, results) {
                contactParent[try #require(result.id)] = record["AccountId"]?.stringValue
            }
        }
        let file = f.temp.path + "/usersyncs.json"
        try #"""
        {"syncs": [{"syncName": "trees", "syncType": "syncDown", "soupName": "pcAccounts",
          "target": {"type": "parentChildren", "batchSize": 10,
            "parent": {"sobjectType": "Account", "soupName": "pcAccounts"},
            "children": {"sobjectType": "Contact", "sobjectTypePlural": "Contacts", "soupName": "pcContacts",
                         "parentIdFieldName": "AccountId"},
            "parentFieldlist": ["Id", "Name"], "childrenFieldlist": ["LastName", "AccountId"],
            "relationshipType": "MASTER_DETAIL"}}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        try await f.client.adminSetFaults(["latencyMs": 20])
        try await f.start("host", role: "host", lifecycle: "foreground", extra: ["--syncs-config", file])
        #expect(try await f.wait(["--writer", "host"]))
        try await f.start("ext", role: "extension", lifecycle: "foreground", extra: ["--syncs-config", file])
        // Mid-way: some pages of trees are in.
        try await f.waitForLog("host", "a few committed pages of trees") { log in
            log.contains {
                $0["event"] == "sync" && $0["name"] == "trees" && ($0["progress"]?.intValue ?? 0) >= 10
            }
        }
        try await f.signal("host", "background")
        #expect(try await f.wait(["--writer", "ext"]))
        #expect(try await f.wait(["--sync", "trees=done"], timeout: 120))
        #expect(
            f.log("host").contains {
                $0["event"] == "sync" && $0["name"] == "trees" && $0["status"] == "stopped"
            })
        try await f.finish()

        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let store = try SharedStore.open(
            directory: try SharedDirectory(path: f.dir), create: false, logger: quiet)
        let parents = try store.query(.all, in: "pcAccounts").compactMap { $0.record["Id"]?.stringValue }
        #expect(parents.count == accountIds.count)
        #expect(Set(parents) == Set(accountIds))
        let children = try store.query(.all, in: "pcContacts").map(\.record)
        #expect(children.count == contactParent.count)
        for child in children {
            let id = try #require(child["Id"]?.stringValue)
            #expect(contactParent[id] == child["AccountId"]?.stringValue, "\(id)")
        }
    }
}
