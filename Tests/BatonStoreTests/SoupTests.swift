import BatonStore
import Testing

@Suite("Soups")
struct SoupTests {
    let fixture: StoreFixture
    var store: SharedStore { fixture.store }
    var unfenced: UnfencedStore { fixture.unfenced }

    init() throws {
        fixture = try StoreFixture()
        try fixture.unfenced.registerSoup(
            "accounts",
            indexSpecs: [
                IndexSpec(path: "Id", type: .string), IndexSpec(path: "Amount", type: .integer),
                IndexSpec(path: "Name", type: .string), IndexSpec(path: "Owner.Region", type: .string),
            ])
    }

    func seed(_ count: Int) throws {
        try unfenced.write { transaction in
            for index in 0..<count {
                try transaction.upsert(
                    [
                        "Id": .string("id-\(index)"), "Amount": .int(Int64(index * 10)),
                        "Name": .string("Name \(index)"),
                        "Owner": ["Region": index % 2 == 0 ? "EU" : "US"],
                    ], into: "accounts", externalIdPath: "Id")
            }
        }
    }

    @Test("create, read, update and delete by entry id")
    func crud() throws {
        let created = try unfenced.upsert(["Id": "a", "Name": "First"], into: "accounts")
        #expect(try store.entry(created.entryId, in: "accounts")?.record["Name"] == "First")
        let updated = try unfenced.upsert(
            ["Id": "a", "Name": "Second"], into: "accounts", entryId: created.entryId)
        #expect(updated.entryId == created.entryId)
        #expect(try store.entry(created.entryId, in: "accounts")?.record["Name"] == "Second")
        #expect(try store.count(in: "accounts") == 1)
        let deleted = try unfenced.write { try $0.delete(entryIds: [created.entryId], from: "accounts") }
        #expect(deleted == 1)
        #expect(try store.entry(created.entryId, in: "accounts") == nil)
        #expect(throws: StoreError.self) {
            try unfenced.upsert(["Id": "a"], into: "accounts", entryId: created.entryId)
        }
    }

    @Test("upsert by external id updates the matching record instead of inserting")
    func upsertByExternalId() throws {
        let first = try unfenced.upsert(
            ["Id": "001", "Name": "A"], into: "accounts", externalIdPath: "Id")
        let second = try unfenced.upsert(
            ["Id": "001", "Name": "B"], into: "accounts", externalIdPath: "Id")
        let other = try unfenced.upsert(
            ["Id": "002", "Name": "C"], into: "accounts", externalIdPath: "Id")
        #expect(first.entryId == second.entryId)
        #expect(other.entryId != first.entryId)
        #expect(try store.count(in: "accounts") == 2)
        #expect(
            try store.read { try $0.entry(where: "Id", equals: "001", in: "accounts") }?.record["Name"] == "B"
        )
    }

    @Test("an external id path that is not indexed is refused")
    func externalIdMustBeIndexed() throws {
        #expect {
            try unfenced.upsert(["Other": "x"], into: "accounts", externalIdPath: "Other")
        } throws: { ($0 as? StoreError)?.code == .notIndexed }
    }

    @Test("exact, range, like and IN queries on indexed paths, including nested paths")
    func queries() throws {
        try seed(20)
        #expect(
            try store.query(SoupQuery(where: [.exact("Id", "id-7")]), in: "accounts").map(\.record["Amount"])
                == [70])
        let range = try store.query(
            SoupQuery(where: [.range("Amount", from: 50, to: 90)], orderBy: [.init("Amount")]), in: "accounts"
        )
        #expect(range.map { $0.record["Amount"] } == [50, 60, 70, 80, 90])
        #expect(try store.count(SoupQuery(where: [.like("Name", "Name 1%")]), in: "accounts") == 11)
        let inQuery = SoupQuery(where: [.isIn("Id", ["id-1", "id-3", "missing"])])
        #expect(try store.count(inQuery, in: "accounts") == 2)
        #expect(try store.count(SoupQuery(where: [.exact("Owner.Region", "EU")]), in: "accounts") == 10)
        #expect(try store.count(SoupQuery(where: [.isIn("Id", [])]), in: "accounts") == 0)
    }

    @Test("ordering and paging return every record once")
    func pagingAndOrdering() throws {
        try seed(25)
        let query = SoupQuery(orderBy: [.init("Amount", ascending: false)])
        var seen: [JSONValue] = []
        for pageIndex in 0..<4 {
            seen += try store.query(query.page(pageIndex, size: 7), in: "accounts").compactMap {
                $0.record["Amount"]
            }
        }
        #expect(seen == (0..<25).reversed().map { .int(Int64($0 * 10)) })

        var streamed = 0
        try store.read { reader in
            try reader.forEachPage(of: .all, in: "accounts", pageSize: 4) { page in
                #expect(page.count <= 4)
                streamed += page.count
                return true
            }
        }
        #expect(streamed == 25)
    }

    @Test("queries on paths that are not indexed are refused")
    func notIndexed() throws {
        #expect {
            try store.query(SoupQuery(where: [.exact("Unindexed", 1)]), in: "accounts")
        } throws: { ($0 as? StoreError)?.code == .notIndexed }
    }

    @Test("unknown soups, bad names and bad index paths are typed errors")
    func badInput() throws {
        #expect { try store.count(in: "missing") } throws: { ($0 as? StoreError)?.code == .unknownSoup }
        #expect { try unfenced.registerSoup("bad name!", indexSpecs: []) } throws: {
            ($0 as? StoreError)?.code == .invalidName
        }
        #expect {
            try unfenced.registerSoup(
                "ok", indexSpecs: [IndexSpec(path: "a'); DROP TABLE x; --", type: .string)])
        } throws: {
            ($0 as? StoreError)?.code == .invalidIndexPath
        }
        #expect(throws: StoreError.self) { try IndexSpec(parsing: "Id:uuid") }
    }

    @Test("registering again adds missing indexes and keeps records")
    func reRegister() throws {
        try seed(3)
        try unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Extra", type: .string)])
        #expect(try store.count(in: "accounts") == 3)
        #expect(try store.count(SoupQuery(where: [.exact("Extra", nil)]), in: "accounts") == 3)
    }

    @Test("dropping a soup removes it and its records")
    func drop() throws {
        try seed(3)
        try unfenced.write { try $0.dropSoup("accounts") }
        #expect(try store.read { try $0.soupIfExists("accounts") } == nil)
    }

    @Test("every committed write bumps the change sequence")
    func changeSequence() throws {
        let before = try store.changeSequence()
        try unfenced.upsert(["Id": "x"], into: "accounts")
        try unfenced.upsert(["Id": "y"], into: "accounts")
        #expect(try store.changeSequence() == before + 2)
        #expect(throws: StoreError.self) {
            try unfenced.write { transaction in
                try transaction.upsert(["Id": "z"], into: "accounts")
                throw StoreError(.interrupted, "rolled back on purpose")
            }
        }
        #expect(try store.changeSequence() == before + 2)
        #expect(try store.count(in: "accounts") == 2)
    }
}
