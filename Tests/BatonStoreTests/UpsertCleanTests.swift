import BatonStore
import Testing

/// The sync down's write: a record as the server sent it, flags set as it is written.
@Suite("Upsert clean")
struct UpsertCleanTests {
    static let specs = [
        IndexSpec(path: "Id", type: .string), IndexSpec(path: "__local__", type: .string),
        IndexSpec(path: "__sync_id__", type: .integer), IndexSpec(path: "__last_error__", type: .string),
        IndexSpec(path: "Owner.Name", type: .string), IndexSpec(path: "Tags", type: .json1),
    ]

    static let records: [JSONObject] = [
        ["Id": "001A", "Name": "plain", "Owner": ["Name": "Ann"], "Tags": ["a", "b"]],
        // Flags the server would never send, and a stale error: all replaced.
        [
            "Id": "001B", "__local__": true, "__locally_updated__": true, "__last_error__": "409",
            "__sync_id__": 99,
        ],
        // No Id: inserted without a lookup.
        ["Name": "no id"],
        // The same Id again: an update of the first.
        ["Id": "001A", "Name": "second", "Owner": ["Name": "Bob"]],
    ]

    @Test(
        "stores what upsert of LocalFlags.clean stores: same records, same index columns",
        arguments: [7, nil] as [Int64?])
    func sameAsCleanThenUpsert(syncId: Int64?) throws {
        let f = try StoreFixture()
        try f.unfenced.registerSoup("viaClean", indexSpecs: Self.specs)
        try f.unfenced.registerSoup("direct", indexSpecs: Self.specs)
        try f.unfenced.write { transaction in
            for record in Self.records {
                try transaction.upsert(
                    LocalFlags.clean(record, syncId: syncId), into: "viaClean", externalIdPath: "Id")
                try transaction.upsertClean(record, syncId: syncId, into: "direct", externalIdPath: "Id")
            }
        }
        let expected = try f.store.query(SoupQuery(), in: "viaClean")
        let direct = try f.store.query(SoupQuery(), in: "direct")
        #expect(expected.count == 3)
        #expect(direct.map(\.entryId) == expected.map(\.entryId))
        #expect(direct.map(\.record) == expected.map(\.record))
        #expect(direct.first?.record["Name"] == "second")
        #expect(direct.dropFirst().first?.record["__sync_id__"] == (syncId.map { .int($0) } ?? 99))
        #expect(direct.allSatisfy { $0.record["__last_error__"] == nil && !LocalFlags.isDirty($0.record) })
        // Every indexed path answers the same from its column.
        let queries: [SoupQuery] = [
            SoupQuery(where: [.exact("Id", "001A")]), SoupQuery(where: [.exact("__local__", false)]),
            SoupQuery(where: [.exact("__sync_id__", syncId.map { .int($0) } ?? 99)]),
            SoupQuery(where: [.exact("__last_error__", nil)]),
            SoupQuery(where: [.exact("Owner.Name", "Bob")]),
            SoupQuery(orderBy: [.init("Owner.Name", ascending: false)]),
        ]
        for query in queries {
            #expect(
                try f.store.query(query, in: "direct").map(\.entryId)
                    == f.store.query(query, in: "viaClean").map(\.entryId))
        }
        #expect(try f.store.query(SoupQuery(where: [.exact("Owner.Name", "Bob")]), in: "direct").count == 1)
    }
}
