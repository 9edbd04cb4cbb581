import BatonJSON
import GRDB
import SOQL
import Testing

@testable import BatonServer

@Suite("Query pages written from the stored text")
struct RecordTextTests {
    /// Stored field texts as older servers and odd clients left them.
    static let stored: [String] = [
        #"{"Name":"Zoë \"quoted\" 🚀","Number__c":1.50,"Description":"line\nnext"}"#,
        // A name in another case (written before the schema canonicalised names).
        #"{"name":"lower","NUMBER__C":2}"#,
        // An escaped key, a nested value, a duplicate key (the last one counts), spacing.
        #" { "N\u0061me" : "escaped key", "Description":{"nested":[1,{"a":"}"}]}, "Number__c":3, "Number__c":4 } "#,
        // No selected field at all.
        #"{"Other":"x"}"#,
        "{}",
    ]

    @Test("each record reads as Projector shapes it: attributes first, fields in the query's order")
    func sameAsProjector() throws {
        let storage = try RecordStorage(path: nil)
        try storage.write { db in
            for (index, fields) in Self.stored.enumerated() {
                let stamp = Int64(1_700_000_000_000 + index * 1001)
                try db.execute(
                    sql:
                        "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES (?, 'Account', ?, ?, ?, ?)",
                    arguments: [
                        RecordId.make(type: "Account", sequence: Int64(index + 1)), stamp - 5, stamp,
                        stamp + 1, fields,
                    ])
            }
        }
        let soql =
            "SELECT Id, Name, Number__c, Description, Name, CreatedDate, LastModifiedDate, SystemModstamp FROM Account ORDER BY CreatedDate"
        let engine = QueryEngine(storage: storage, stats: ServerStats())
        let page = try engine.start(soql: soql, batchSize: 2, apiPath: "/services/data/v58.0")
        var bodies = [page.body]
        var next = try JSONValue(parsing: page.body).objectValue?["nextRecordsUrl"]?.stringValue
        while let url = next {
            let more = try engine.next(locator: String(url.split(separator: "/").last!))
            bodies.append(more.body)
            next = try JSONValue(parsing: more.body).objectValue?["nextRecordsUrl"]?.stringValue
        }
        let records = try bodies.flatMap {
            try JSONValue(parsing: $0).objectValue?["records"]?.arrayValue ?? []
        }
        #expect(records.count == Self.stored.count)

        let resolved = try storage.schema.resolve(try SOQLQuery(parsing: soql))
        let projector = Projector(schema: storage.schema, apiPath: "/services/data/v58.0")
        let expected = try storage.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM records ORDER BY created").map { row in
                JSONValue.object(
                    try projector.project(try RecordStorage.fullRecord(row), resolved, related: nil))
            }
        }
        #expect(records == expected)
        #expect(records.first?.objectValue?["Name"] == .string("Zoë \"quoted\" 🚀"))
        #expect(records[1].objectValue?["Name"] == .string("lower"))
        #expect(records[2].objectValue?["Number__c"] == .int(4))
        #expect(records[3].objectValue?["Name"] == .null)

        // The text itself: attributes first, then each field once, in the order the query names them.
        let text = String(decoding: page.body, as: UTF8.self)
        #expect(
            text.contains(
                #"{"attributes":{"type":"Account","url":"/services/data/v58.0/sobjects/Account/"#))
        let first = try #require(text.range(of: #""Id":"#)?.lowerBound)
        let order = [
            "\"Id\":", "\"Name\":", "\"Number__c\":", "\"Description\":", "\"CreatedDate\":",
            "\"LastModifiedDate\":", "\"SystemModstamp\":",
        ]
        let positions = order.compactMap { text[first...].range(of: $0)?.lowerBound }
        #expect(positions.count == order.count)
        #expect(positions == positions.sorted())
    }

    @Test("records come in the query's order, not the table's; one deleted meanwhile is skipped")
    func orderAndDeleted() throws {
        let storage = try RecordStorage(path: nil)
        let names = ["d", "a", "f", "c", "e", "b", "h", "g"]
        try storage.write { db in
            for (index, name) in names.enumerated() {
                try db.execute(
                    sql:
                        "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES (?, 'Account', 1, 1, 1, ?)",
                    arguments: [
                        RecordId.make(type: "Account", sequence: Int64(index + 1)), #"{"Name":"\#(name)"}"#,
                    ])
            }
        }
        let engine = QueryEngine(storage: storage, stats: ServerStats())
        func namesIn(_ body: [UInt8]) throws -> [String] {
            try JSONValue(parsing: body).value(atPath: "records")?.arrayValue?.compactMap {
                $0.value(atPath: "Name")?.stringValue
            } ?? []
        }
        let first = try engine.start(soql: "SELECT Name FROM Account ORDER BY Name DESC", batchSize: 4)
        #expect(try namesIn(first.body) == ["h", "g", "f", "e"])
        // "c" (page two, between "d" and "b") goes before that page is read.
        try storage.write { db in try db.execute(sql: "DELETE FROM records WHERE fields LIKE '%\"c\"%'") }
        let url = try #require(
            try JSONValue(parsing: first.body).value(atPath: "nextRecordsUrl")?.stringValue)
        let second = try engine.next(locator: String(url.split(separator: "/").last!))
        #expect(try namesIn(second.body) == ["d", "b", "a"])
        #expect(second.count == 3)
    }

    @Test(
        "a page looks its rows up by row id, not by walking the type's records",
        arguments: [1, 5, 200, 2000])
    func pagePlan(count: Int) throws {
        let storage = try RecordStorage(path: nil)
        let sql = "EXPLAIN QUERY PLAN " + QueryEngine.pageSQL(columns: RecordTextWriter.columns, count: count)
        let values: [(any DatabaseValueConvertible)?] = ["Account"] + (1...count).map { Int64($0) }
        let arguments = StatementArguments(values)
        let plan = try storage.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { $0["detail"] as String }
        }
        #expect(plan == ["SEARCH records USING INTEGER PRIMARY KEY (rowid=?)"])
    }

    @Test("a record whose stored text is not an object fails the page with a server error, not a bad body")
    func corruptStoredText() throws {
        let storage = try RecordStorage(path: nil)
        try storage.write { db in
            try db.execute(
                sql:
                    "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES ('001000000000001AAA', 'Account', 1, 1, 1, '{\"Name\":')"
            )
        }
        let engine = QueryEngine(storage: storage, stats: ServerStats())
        #expect(throws: JSONParseError.self) {
            try engine.start(soql: "SELECT Id, Name FROM Account", batchSize: 10)
        }
    }
}
