import BatonTestSupport
import Foundation
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
}
