import BatonStore
import BatonTestSupport
import Foundation
import GRDB
import Logging
import Testing

/// Indexed paths live in columns of their own (SQLite parses no JSON on insert); a store written
/// before that is migrated in place and answers every query as it did.
@Suite("Index columns")
struct IndexColumnTests {
    /// `Fixtures/BeforeIndexColumns`: a store made by `baton store` before index columns (soups
    /// `accounts`, with string, integer, floating, nested, json1 and boolean paths, local edits,
    /// a record with no Id; and `notes`), and the entry ids its queries returned then.
    static func fixture() throws -> (TemporaryDirectory, UnfencedStore, JSONValue) {
        let folder = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
            .appendingPathComponent("BeforeIndexColumns")
        let temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path + "/d")
        try FileManager.default.copyItem(
            atPath: folder.appendingPathComponent("store.sqlite").path, toPath: directory.storePath)
        let expected = try JSONValue(
            parsing: try Data(contentsOf: folder.appendingPathComponent("expected.json")))
        let unfenced = try UnfencedStore.open(
            directory: directory, create: false, logger: Logger(label: "test"))
        return (temp, unfenced, expected)
    }

    /// A query of the fixture's answers file: `{"exact": [path, value]}` and the like.
    static func query(_ json: JSONValue) throws -> SoupQuery {
        let object = try #require(json.objectValue)
        let (kind, arguments) = try #require(object.first)
        let a = arguments.arrayValue ?? []
        let path = try #require(a.first?.stringValue)
        switch kind {
        case "exact": return SoupQuery(where: [.exact(path, a[1])])
        case "range":
            // (`JSONValue` is nil-literal expressible: an open end must be `Optional.none`.)
            let from: JSONValue? = a[1].isNull ? .none : a[1]
            let to: JSONValue? = a[2].isNull ? .none : a[2]
            return SoupQuery(where: [.range(path, from: from, to: to)])
        case "like": return SoupQuery(where: [.like(path, a[1].stringValue ?? "")])
        case "in": return SoupQuery(where: [.isIn(path, a[1].arrayValue ?? [])])
        default: return SoupQuery(orderBy: [.init(path, ascending: a[1].boolValue ?? true)])
        }
    }

    @Test("a store written before index columns is migrated in place and gives the same answers")
    func migratesFixture() throws {
        let (temp, unfenced, expected) = try Self.fixture()
        let store = unfenced.store
        _ = temp
        let cases = try #require(expected.value(atPath: "queries")?.arrayValue)
        #expect(cases.count >= 15)
        for item in cases {
            let name = item.value(atPath: "name")?.stringValue ?? "?"
            let soup = try #require(item.value(atPath: "soup")?.stringValue)
            let query = try Self.query(try #require(item.value(atPath: "query")))
            let ids = try store.query(query, in: soup).map { JSONValue.int($0.entryId) }
            #expect(ids == item.value(atPath: "entryIds")?.arrayValue, "\(name)")
        }
        // Every record reads back as it was written.
        for soup in ["accounts", "notes"] {
            let stored = try #require(expected.value(atPath: "records.\(soup)")?.objectValue)
            let entries = try store.query(.all, in: soup)
            #expect(entries.count == stored.count)
            for entry in entries {
                #expect(
                    JSONValue.object(entry.record) == stored[String(entry.entryId)],
                    "\(soup) #\(entry.entryId)")
            }
        }
        // The expression indexes the columns replace are gone; json1 keeps its own.
        let file = try DatabaseQueue(path: store.directory.storePath)
        let indexes = try file.read { db in
            try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'soup_1'")
        }
        #expect(!indexes.contains("soup_1_Id") && !indexes.contains("soup_1___local__"))
        #expect(indexes.contains("soup_1_Tags"))
        #expect(indexes.contains("soup_1_c0") && indexes.contains("soup_1_c_local"))
    }

    @Test("after the migration, writes fill the columns: an upsert by Id finds a migrated record")
    func writesAfterMigration() throws {
        let (temp, unfenced, _) = try Self.fixture()
        let store = unfenced.store
        _ = temp
        let entry = try unfenced.write { transaction in
            try transaction.upsert(
                ["Id": "001C", "Name": "Crane 2", "Number__c": 31, "Owner": ["Name": "Wu"]], into: "accounts",
                externalIdPath: "Id")
        }
        #expect(entry.entryId == 3)
        #expect(
            try store.query(SoupQuery(where: [.exact("Owner.Name", "Wu")]), in: "accounts").map(\.entryId)
                == [3])
        #expect(
            try store.query(SoupQuery(where: [.exact("Number__c", 30)]), in: "accounts").map(\.entryId) == [6]
        )
        #expect(try store.count(SoupQuery(where: [.exact("Owner.Name", "acme owner")]), in: "accounts") == 0)
    }

    @Test("a spec added to a soup with records gets its column filled from them")
    func addedSpec() throws {
        let f = try StoreFixture()
        try f.unfenced.registerSoup("s", indexSpecs: [IndexSpec(path: "a", type: .string)])
        try f.unfenced.write { transaction in
            try transaction.upsert([["a": "x", "n": 1], ["a": "y", "n": 2, "o": ["p": true]]], into: "s")
        }
        try f.unfenced.registerSoup(
            "s", indexSpecs: [IndexSpec(path: "n", type: .integer), IndexSpec(path: "o.p", type: .integer)])
        #expect(try f.store.query(SoupQuery(where: [.exact("n", 2)]), in: "s").map(\.entryId) == [2])
        #expect(try f.store.query(SoupQuery(where: [.exact("o.p", true)]), in: "s").map(\.entryId) == [2])
        #expect(try f.store.count(SoupQuery(where: [.exact("o.p", nil)]), in: "s") == 1)
    }

    @Test("queries by indexed path, range, IN and order use an index, on a new soup and a migrated one")
    func queryPlans() throws {
        let (temp, unfenced, _) = try Self.fixture()
        let store = unfenced.store
        _ = temp
        let queries: [(String, SoupQuery)] = [
            ("exact", SoupQuery(where: [.exact("Id", "001A")])),
            ("exact nested", SoupQuery(where: [.exact("Owner.Name", "Zoe")])),
            ("exact json1", SoupQuery(where: [.exact("Tags", "solo")])),
            ("range", SoupQuery(where: [.range("Number__c", from: 10, to: 30)])),
            ("in", SoupQuery(where: [.isIn("Id", ["001A", "001B"])])),
            ("dirty", SoupQuery(where: [.exact("__local__", true)])),
            ("order", SoupQuery(orderBy: [.init("Rating__c", ascending: false)])),
        ]
        let fresh = try StoreFixture()
        try fresh.unfenced.registerSoup(
            "accounts",
            indexSpecs: [
                IndexSpec(path: "Id", type: .string), IndexSpec(path: "Number__c", type: .integer),
                IndexSpec(path: "Rating__c", type: .floating), IndexSpec(path: "Owner.Name", type: .string),
                IndexSpec(path: "Tags", type: .json1),
            ])
        for (label, store) in [("migrated", store), ("new", fresh.store)] {
            for (name, query) in queries {
                let detail = try store.explain(query, in: "accounts")
                let expected =
                    query.conditions.isEmpty ? "SCAN soup_1 USING INDEX" : "SEARCH soup_1 USING INDEX"
                #expect(detail.contains(expected), "\(label) \(name): \(detail)")
                // The order is the index's; only ties may be sorted apart (by entry id).
                if !query.orderBy.isEmpty {
                    #expect(!detail.contains("TEMP B-TREE FOR ORDER BY"), "\(label) \(name): \(detail)")
                }
            }
        }
    }
}
