import BatonStore
import Testing

@Suite("Store fidelity")
struct StoreFidelityTests {
    @Test("records keep their exact values through the store")
    func storeFidelity() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("things", indexSpecs: [])
        let record: JSONObject = [
            "unicode": "Ünïcödé ✓ 😀", "big": .int(9_007_199_254_740_993), "double": 0.1, "whole": 2.0,
            "nested": ["list": [1, "two", ["three": 3]]], "null": nil, "flag": false,
        ]
        let entry = try fixture.unfenced.upsert(record, into: "things")
        #expect(try fixture.store.entry(entry.entryId, in: "things")?.record == record)
    }
}

@Suite("A page save's statements, bound in place")
struct BoundStatementTests {
    @Test(
        "index columns keep each kind of value: empty text (not NULL), a boolean as 0/1, a fraction, a 64-bit integer, null; each is found again by exact match, in a query and by the save's own lookup"
    )
    func indexColumns() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup(
            "things",
            indexSpecs: [IndexSpec(path: "key", type: .string), IndexSpec(path: "n", type: .floating)])
        let keys: [JSONValue] = [
            .string("a"), .string(""), .bool(true), .bool(false), .double(0.1),
            .int(9_007_199_254_740_993), .string("Ünïcödé 😀"),
        ]
        let ids = try fixture.unfenced.write { transaction in
            try keys.map { key in
                try transaction.upsertClean(["key": key, "n": 1.5], syncId: 4, into: "things", entryId: nil)
            }
        }
        _ = try fixture.unfenced.upsert(["key": nil, "n": nil], into: "things")
        for (key, id) in zip(keys, ids) {
            let found = try fixture.store.query(SoupQuery(where: [.exact("key", key)]), in: "things")
            #expect(found.map(\.entryId) == [id], "\(key)")
            let looked = try fixture.unfenced.write {
                try $0.storedEntry(where: "key", equals: key, in: "things")
            }
            #expect(looked?.entryId == id, "\(key)")
            #expect(looked?.record["key"] == key)
            #expect(looked?.record["n"] == 1.5)
        }
        // `true` is stored as 1, as json_extract reads it: the integer 1 finds it too.
        #expect(try fixture.store.count(SoupQuery(where: [.exact("key", .int(1))]), in: "things") == 1)
        #expect(try fixture.store.count(SoupQuery(where: [.exact("n", 1.5)]), in: "things") == keys.count)
        #expect(
            try fixture.unfenced.write { try $0.storedEntry(where: "key", equals: "none", in: "things") }
                == nil)
    }

    @Test("an update of an entry that is gone fails as entryNotFound, and the statement runs again after it")
    func updateOfMissingEntry() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("things", indexSpecs: [IndexSpec(path: "key", type: .string)])
        #expect(throws: StoreError.self) {
            try fixture.unfenced.write { transaction in
                try transaction.upsertClean(["key": "x"], syncId: 1, into: "things", entryId: 999)
            }
        }
        let id = try fixture.unfenced.write { transaction in
            try transaction.upsertClean(["key": "x"], syncId: 1, into: "things", entryId: nil)
        }
        try fixture.unfenced.write { transaction in
            _ = try transaction.upsertClean(["key": "y"], syncId: 1, into: "things", entryId: id)
        }
        #expect(try fixture.store.entry(id, in: "things")?.record["key"] == "y")
    }
}
