import BatonREST
import BatonStore
import BatonSync
import Testing

/// Issue 53: what the writer cannot run is refused when the config is read, with the file, line
/// and field; repeated and unknown keys too; and reading costs time linear in the file.
@Suite("Sync configs: what cannot run is refused at the start", .timeLimit(.minutes(2)))
struct SyncsConfigRefusalTests {
    let factory = RESTTargetFactory(client: RESTClient(baseURL: "http://127.0.0.1:1", token: "t"))

    /// One sync down, its target on line 4; `name`, `soup` and `target` as JSON text.
    static func file(
        name: String = "\"accounts\"", soup: String = "\"accounts\"",
        target: String = #"{"type": "soql", "query": "SELECT Id, Name FROM Account"}"#
    ) -> String {
        """
        {"syncs": [
          {"syncName": \(name), "syncType": "syncDown",
           "soupName": \(soup),
           "target": \(target)}
        ]}
        """
    }

    func refusal(_ text: String) -> String? {
        do {
            _ = try SyncsConfig(parsing: Array(text.utf8), file: "usersyncs.json", factory: factory)
            return nil
        } catch {
            return (error as? SyncError)?.message ?? "\(error)"
        }
    }

    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var text: String
        /// `usersyncs.json:LINE: FIELD: ` and then something the message says.
        var prefix: String
        var says: String
    }

    static let cases: [Case] = [
        Case(
            description: "a name with a space and a '!'", text: file(name: "\"bad name!\""),
            prefix: "usersyncs.json:2: syncs[0].syncName: ", says: "invalid sync name 'bad name!'"),
        Case(
            description: "a 300-character name",
            text: file(name: "\"\(String(repeating: "n", count: 300))\""),
            prefix: "usersyncs.json:2: syncs[0].syncName: ", says: "use 1-64 of"),
        Case(
            description: "a soup name with a ';'", text: file(soup: "\"bad soup;\""),
            prefix: "usersyncs.json:3: syncs[0].soupName: ", says: "invalid soup name 'bad soup;'"),
        Case(
            description: "a batch size as a string",
            text: file(target: #"{"type": "soql", "query": "SELECT Id FROM Account", "batchSize": "200"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.batchSize: ", says: "\"200\" is not a whole number"),
        Case(
            description: "a misspelt key",
            text: file(target: #"{"type": "soql", "qurey": "SELECT Id FROM Account"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.qurey: ", says: "unknown key (known: batchSize,"),
        Case(
            description: "an id field that is a number",
            text: file(target: #"{"type": "soql", "query": "SELECT Id FROM Account", "idFieldName": 7}"#),
            prefix: "usersyncs.json:4: syncs[0].target.idFieldName: ", says: "7 is not a string"),
        Case(
            description: "an id field the soup cannot index",
            text: file(
                target: #"{"type": "soql", "query": "SELECT Id FROM Account", "idFieldName": "Id-x"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.idFieldName: ", says: "not a valid index path"),
        Case(
            description: "a key given twice",
            text: file(soup: "\"accounts\", \"soupName\": \"others\""),
            prefix: "usersyncs.json:3: syncs[0].soupName: ", says: "the key is given twice"),
        Case(
            description: "a key given twice in a target",
            text: file(target: #"{"type": "soql", "query": "SELECT Id FROM Account", "type": "soql"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.type: ", says: "the key is given twice"),
        Case(
            description: "a SOSL target that is not a search",
            text: file(target: #"{"type": "sosl", "query": "not a search"}"#),
            prefix: "usersyncs.json:4: syncs[0].target: ", says: "not a valid SOSL search"),
        Case(
            description: "a SOSL target naming a type twice",
            text: file(target: #"{"type": "sosl", "query": "FIND {Acme} RETURNING Account, account(Id)"}"#),
            prefix: "usersyncs.json:4: syncs[0].target: ", says: "each object must be distinct"),
        Case(
            description: "an unknown target type",
            text: file(target: #"{"type": "custom", "iOSImpl": "MyTarget"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.type: ", says: "not a sync down target type"),
        Case(
            description: "a key a metadata target would ignore",
            text: file(target: #"{"type": "metadata", "sobjectType": "Account", "idFieldName": "Key"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.idFieldName: ", says: "unknown key"),
        Case(
            description: "a layout type that is not one",
            text: file(target: #"{"type": "layout", "sobjectType": "Account", "layoutType": "Huge"}"#),
            prefix: "usersyncs.json:4: syncs[0].target.layoutType: ", says: "\"Full\" or \"Compact\""),
        Case(
            description: "a children soup the store would refuse",
            text: file(
                target: #"""
                    {"type": "parentChildren", "parent": {"sobjectType": "Account", "soupName": "accounts"},
                     "children": {"sobjectType": "Contact", "sobjectTypePlural": "Contacts",
                                  "soupName": "contacts", "parentIdFieldName": "Account-Id"},
                     "parentFieldlist": ["Name"], "childrenFieldlist": ["LastName"]}
                    """#),
            prefix: "usersyncs.json:6: syncs[0].target.children.parentIdFieldName: ",
            says: "not a valid index path"),
        Case(
            description: "a key a parent-children target's children do not have",
            text: file(
                target: #"""
                    {"type": "parentChildren", "parent": {"sobjectType": "Account", "soupName": "accounts"},
                     "children": {"sobjectType": "Contact", "sobjectTypePlural": "Contacts",
                                  "soupName": "contacts", "parentIdFieldName": "AccountId", "soup": "x"},
                     "parentFieldlist": ["Name"], "childrenFieldlist": ["LastName"]}
                    """#),
            prefix: "usersyncs.json:6: syncs[0].target.children.soup: ", says: "unknown key"),
    ]

    @Test("each refusal names the file, the line and the field", arguments: cases)
    func refused(_ example: Case) {
        let message = refusal(example.text)
        #expect(message?.hasPrefix(example.prefix) == true, "\(message ?? "accepted")")
        #expect(message?.contains(example.says) == true, "\(message ?? "accepted")")
    }

    @Test("the same file without the fault is accepted, so each refusal is the fault's")
    func baseAccepted() throws {
        #expect(refusal(Self.file()) == nil)
        let tree = #"""
            {"type": "parentChildren", "parent": {"sobjectType": "Account", "soupName": "accounts"},
             "children": {"sobjectType": "Contact", "sobjectTypePlural": "Contacts",
                          "soupName": "contacts", "parentIdFieldName": "AccountId"},
             "parentFieldlist": ["Name"], "childrenFieldlist": ["LastName"], "batchSize": 10}
            """#
        #expect(refusal(Self.file(target: tree)) == nil)
        let soql = #"{"type": "soql", "query": "SELECT Id FROM Account", "maxBatchSize": 50}"#
        let config = try SyncsConfig(
            parsing: Array(Self.file(target: soql).utf8), file: "f", factory: factory)
        guard case .down(let target) = config.entries.first?.target else {
            Issue.record("expected a sync down")
            return
        }
        // Mobile Sync's `maxBatchSize` is the batch size.
        #expect((target as? SoqlSyncDownTarget)?.batchSize == 50)
    }

    @Test("a leading UTF-8 byte-order mark is skipped, as Mobile Sync's loaders skip it")
    func byteOrderMark() throws {
        let text = Array(Self.file().utf8)
        let config = try SyncsConfig(parsing: [0xEF, 0xBB, 0xBF] + text, file: "f", factory: factory)
        #expect(config.entries.map(\.name) == ["accounts"])
        #expect(config.entries.first?.line == 2)
        // Anywhere else it is named.
        let inside = Array("{\"syncs\": ".utf8) + [0xEF, 0xBB, 0xBF] + Array("[]}".utf8)
        #expect(throws: SyncError.self) {
            try SyncsConfig(parsing: inside, file: "f", factory: factory)
        }
        do {
            _ = try SyncsConfig(parsing: inside, file: "f", factory: factory)
        } catch let error as SyncError {
            #expect(error.message.contains("byte-order mark (EF BB BF)"), "\(error.message)")
        }
    }

    @Test("nothing the engine refuses to create is accepted, and all it creates is")
    func sameRulesAsTheEngine() async throws {
        let names = [
            "ok", "a.b-c_d", "", "bad name!", String(repeating: "n", count: 64),
            String(repeating: "n", count: 65), "..", "é",
        ]
        let idFields = ["Id", "Owner.Name", "Id-x", "1Id", "Id;"]
        try await withSyncFixture { f in
            let factory = RESTTargetFactory(client: f.client)
            var tried = 0
            for name in names {
                for idField in idFields {
                    tried += 1
                    let soup = "soup\(tried)"
                    let text = Self.file(
                        name: JSONValue.string(name).jsonString, soup: "\"\(soup)\"",
                        target:
                            #"{"type": "soql", "query": "SELECT Id FROM Account", "idFieldName": "\#(idField)"}"#
                    )
                    // Whether it throws is the answer; what it says is checked in `refused`.
                    let accepted =
                        (try? SyncsConfig(parsing: Array(text.utf8), file: "f", factory: factory)) != nil
                    let target = try SoqlSyncDownTarget(
                        client: f.client, query: "SELECT Id FROM Account", idFieldName: idField)
                    // The engine's answer is the expectation: whether it throws is what is compared.
                    let created =
                        (try? await f.manager.createSyncDown(target: target, soupName: soup, name: name))
                        != nil
                    if created { try await f.manager.deleteSync(name: name) }
                    #expect(accepted == created, "name '\(name)', id field '\(idField)'")
                }
            }
            #expect(tried == names.count * idFields.count)
        }
    }

    @Test("16,000 syncs are read with work linear in the file: one outline, a few steps an entry")
    func linear() throws {
        let count = 16_000
        var text = "{\"syncs\": [\n"
        for index in 0..<count {
            text += """
                  {"syncName": "s\(index)", "syncType": "syncDown", "soupName": "accounts",
                   "target": {"type": "soql", "query": "SELECT Id, Name FROM Account"}}\(index < count - 1 ? "," : "")

                """
        }
        text += "]}\n"
        let bytes = Array(text.utf8)
        let config = try SyncsConfig(parsing: bytes, file: "f", factory: factory)
        #expect(config.entries.count == count)
        // Entry N starts on line 2 + 2N.
        #expect(config.entries.last?.line == 2 + 2 * (count - 1))
        #expect(config.entries[7_000].line == 2 + 2 * 7_000)
        // Rescanning the file for each entry's line would be ~count/2 × the file.
        #expect(config.locationWork <= 2 * bytes.count + 4 * count, "\(config.locationWork)")
    }
}
