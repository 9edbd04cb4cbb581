import BatonREST
import BatonStore
import BatonSync
import Testing

/// Mobile Sync 7.1's `SFSDKSyncsConfigTests`, ported with its test app's config files verbatim,
/// and what Baton adds: an existing sync left alone, and malformed files refused with the line
/// and field.
@Suite("Sync configs (Mobile Sync's usersyncs.json)", .timeLimit(.minutes(2)))
struct SyncsConfigTests {
    /// `SmartSyncTestApp/usersyncs.json` at v7.1.2 (`globalsyncs.json` is the same with
    /// `globalSync1` and `globalSync2`).
    static func file(_ prefix: String) -> String {
        """
        {
            "syncs": [
                {
                    "syncName": "\(prefix)Sync1",
                    "syncType": "syncDown",
                    "soupName": "accounts",
                    "target": {"type":"soql", "query":"SELECT Id, Name, LastModifiedDate FROM Account"},
                    "options": {"mergeMode":"OVERWRITE"}
                },
                {
                    "syncName": "\(prefix)Sync2",
                    "syncType": "syncUp",
                    "soupName": "accounts",
                    "target": {"createFieldlist":["Name"]},
                    "options": {"fieldlist":["Id", "Name", "LastModifiedDate"], "mergeMode":"LEAVE_IF_CHANGED"}
                }
            ]
        }
        """
    }

    func config(_ text: String, _ f: SyncFixture) throws -> SyncsConfig {
        try SyncsConfig(
            parsing: Array(text.utf8), file: "usersyncs.json", factory: RESTTargetFactory(client: f.client))
    }

    @Test(
        "testSetupUserSyncsFromDefaulltConfig and testSetupGlobalSyncsFromDefaultConfig: the file's syncs are created, new",
        arguments: ["user", "global"])
    func setupFromConfig(prefix: String) async throws {
        try await withSyncFixture { f in
            #expect(try await f.manager.getSyncStatus(name: "\(prefix)Sync1") == nil)
            #expect(try await f.manager.getSyncStatus(name: "\(prefix)Sync2") == nil)
            let created = try await f.manager.createSyncs(try config(Self.file(prefix), f))
            #expect(created.map(\.name) == ["\(prefix)Sync1", "\(prefix)Sync2"])

            let sync1 = try #require(try await f.manager.getSyncStatus(name: "\(prefix)Sync1"))
            #expect(sync1.soupName == "accounts")
            #expect(sync1.type == .syncDown)
            #expect(sync1.status == .new && sync1.progress == 0 && sync1.totalSize == -1)
            let down = try RESTTargetFactory(client: f.client).syncDownTarget(from: sync1.target)
            let expectedDown = try SoqlSyncDownTarget(
                client: f.client, query: "SELECT Id, Name, LastModifiedDate FROM Account")
            #expect((down as? SoqlSyncDownTarget)?.fetchQuery == expectedDown.fetchQuery)
            #expect(sync1.options == SyncOptions(mergeMode: .overwrite))

            let sync2 = try #require(try await f.manager.getSyncStatus(name: "\(prefix)Sync2"))
            #expect(sync2.soupName == "accounts")
            #expect(sync2.type == .syncUp)
            #expect(sync2.status == .new && sync2.progress == 0 && sync2.totalSize == -1)
            let up = try RESTTargetFactory(client: f.client).syncUpTarget(from: sync2.target)
            #expect(up.createFieldlist == ["Name"])
            #expect(up.updateFieldlist == nil)
            #expect((up as? RESTSyncUpTarget)?.objectType == "Account")  // from the sync down on `accounts`
            #expect(
                sync2.options
                    == SyncOptions(mergeMode: .leaveIfChanged, fieldlist: ["Id", "Name", "LastModifiedDate"]))
        }
    }

    @Test("a sync of the same name is left as it is; the others are created, and run like any sync")
    func existingLeftAlone() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 3)
            let mine = try await f.manager.createSyncDown(
                target: try f.soqlTarget("SELECT Id FROM Account WHERE Name = 'nobody'"), soupName: "mine",
                name: "userSync1")
            let created = try await f.manager.createSyncs(try config(Self.file("user"), f))
            #expect(created.map(\.name) == ["userSync2"])
            let kept = try #require(try await f.manager.getSyncStatus(name: "userSync1"))
            #expect(kept.id == mine.id && kept.soupName == "mine" && kept.target == mine.target)
            // Creating again changes nothing.
            #expect(try await f.manager.createSyncs(try config(Self.file("user"), f)).isEmpty)
            let ran = try await f.manager.reSync(name: "userSync2")
            #expect(await f.manager.waitForSync(id: ran.id)?.status == .done)
        }
    }

    @Test("a malformed file is refused with its line and field")
    func malformed() async throws {
        try await withSyncFixture { f in
            func refusal(_ text: String) -> String? {
                do {
                    _ = try config(text, f)
                    return nil
                } catch {
                    return (error as? SyncError)?.message ?? "\(error)"
                }
            }
            let good = Self.file("user")
            // Not JSON: line and column of the problem.
            #expect(refusal(good.replacingOccurrences(of: "\"OVERWRITE\"}", with: "\"OVERWRITE\"")) != nil)
            #expect(refusal("{\"syncs\": [\n  {\"syncName\": }\n]}")?.hasPrefix("usersyncs.json:2:") == true)
            // A merge mode that is not one: its line (8) and path.
            let mode = refusal(good.replacingOccurrences(of: "\"OVERWRITE\"", with: "\"SOMETIMES\""))
            #expect(
                mode?.hasPrefix("usersyncs.json:8: syncs[0].options.mergeMode: ") == true, "\(mode ?? "")")
            // A typo in a key, on line 6.
            let typo = refusal(good.replacing("\"soupName\"", with: "\"soupNam\"", maxReplacements: 1))
            #expect(
                typo?.hasPrefix("usersyncs.json:6: syncs[0].soupNam: unknown key") == true, "\(typo ?? "")")
            // A query that is not SOQL: the target's line (7).
            let query = refusal(good.replacingOccurrences(of: "FROM Account\"}", with: "FORM Account\"}"))
            #expect(query?.hasPrefix("usersyncs.json:7: syncs[0].target: ") == true, "\(query ?? "")")
            // A sync type Mobile Sync would have taken for syncUp.
            let type = refusal(
                good.replacingOccurrences(of: "\"syncType\": \"syncUp\"", with: "\"syncType\": \"up\""))
            #expect(
                type?.hasPrefix("usersyncs.json:12: syncs[1].syncType: 'up' is not syncDown or syncUp")
                    == true, "\(type ?? "")")
            // A name used twice, a sync up with nothing to name its object.
            #expect(
                refusal(good.replacingOccurrences(of: "userSync2", with: "userSync1"))?.contains("used twice")
                    == true)
            // The sync up's soup (its second `soupName`) has no sync down.
            var orphanText = good
            if let second = good.ranges(of: "\"soupName\": \"accounts\"").last {
                orphanText.replaceSubrange(second, with: "\"soupName\": \"contacts\"")
            }
            let orphan = refusal(orphanText)
            #expect(orphan?.contains("objectType") == true, "\(orphan ?? "")")
            // Missing pieces.
            #expect(
                refusal("{\"syncs\": [{\"syncType\": \"syncDown\"}]}")?.contains("syncs[0].syncName") == true)
            #expect(refusal("{\"sync\": []}")?.contains("{\"syncs\": [") == true)
        }
    }
}
