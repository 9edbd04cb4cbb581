import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import SOQL
import Testing

@Suite("Server query paging")
struct QueryPagingTests {
    @Test("every record exactly once, in order, whatever the batch size", arguments: [1, 7, 2000])
    func paging(batchSize: Int) async throws {
        try await withLiveServer { _, client in
            let count = batchSize == 2000 ? 4500 : 60
            try await client.adminSeed(type: "Account", count: count)
            var ids: [String] = []
            var numbers: [Int64] = []
            var pages = 0
            for try await page in client.query(
                "SELECT Id, Number__c FROM Account ORDER BY Number__c", batchSize: batchSize)
            {
                #expect(page.records.count <= batchSize)
                #expect(page.totalSize == count)
                ids += page.records.compactMap { $0["Id"]?.stringValue }
                numbers += page.records.compactMap { $0["Number__c"]?.intValue }
                pages += 1
            }
            #expect(ids.count == count)
            #expect(Set(ids).count == count)
            #expect(numbers == (1...Int64(count)).map { $0 })
            #expect(pages == (count + batchSize - 1) / batchSize)
        }
    }

    @Test("a page asked for with its own batch size gets that many; the next one keeps the query's size")
    func batchSizePerPage() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 30)
            let first = try await client.queryFirstPage(
                "SELECT Id FROM Account ORDER BY Number__c", batchSize: 5)
            #expect(first.records.count == 5)
            let second = try await client.queryNextPage(try #require(first.nextRecordsUrl), batchSize: 12)
            #expect(second.records.count == 12)
            let third = try await client.queryNextPage(try #require(second.nextRecordsUrl))
            #expect(third.records.count == 5)
            await #expect {
                try await client.queryNextPage(try #require(third.nextRecordsUrl), batchSize: 5000)
            } throws: { ($0 as? RESTError)?.errorCode == "INVALID_QUERY_OPTIONS" }
        }
    }

    @Test("records sharing a time stamp across a page boundary are each served once")
    func ties() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Contact", count: 20, timeStamps: 2)
            var stamps: [Int64] = []
            var ids: [String] = []
            for try await page in client.query(
                "SELECT Id, LastModifiedDate FROM Contact ORDER BY LastModifiedDate", batchSize: 7)
            {
                for record in page.records {
                    ids.append(record["Id"]?.stringValue ?? "")
                    stamps.append(
                        DateTimeLiteral.milliseconds(record["LastModifiedDate"]?.stringValue ?? "") ?? -1)
                }
            }
            #expect(Set(ids).count == 20)
            #expect(stamps == stamps.sorted())
            #expect(Set(stamps).count == 2)
            // The 7th and 8th records (the first page boundary) share a time stamp.
            #expect(stamps[6] == stamps[7])
        }
    }

    @Test(
        "WHERE, ORDER BY, LIMIT and OFFSET are evaluated by the server",
        arguments: [
            ("SELECT Id FROM Account WHERE Number__c <= 10", 10),
            ("SELECT Id FROM Account WHERE Number__c > 5 AND Number__c < 9", 3),
            ("SELECT Id FROM Account WHERE Number__c IN (1, 2, 3, 99)", 3),
            ("SELECT Id FROM Account WHERE Number__c NOT IN (1, 2)", 38),
            ("SELECT Id FROM Account WHERE Name LIKE 'account 1%'", 11),
            ("SELECT Id FROM Account WHERE NOT Name LIKE 'Account 1%'", 29),
            ("SELECT Id FROM Account WHERE Number__c = 1 OR Number__c = 40", 2),
            ("SELECT Id FROM Account WHERE Industry__c = null", 40),
            ("SELECT Id FROM Account WHERE Industry__c != null", 0),
            ("SELECT Id FROM Account WHERE LastModifiedDate > 2000-01-01T00:00:00Z", 40),
            ("SELECT Id FROM Account ORDER BY Number__c DESC LIMIT 5", 5),
            ("SELECT Id FROM Account ORDER BY Number__c LIMIT 10 OFFSET 35", 5),
            ("SELECT Id FROM Contact", 0),
        ])
    func whereClauses(soql: String, expected: Int) async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 40)
            let page = try await client.queryFirstPage(soql)
            #expect(page.totalSize == expected)
            #expect(page.records.count == expected)
        }
    }

    @Test("a declared field never written reads as null; names come back in their declared case")
    func projection() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 1)
            let page = try await client.queryFirstPage("SELECT Id, name, industry__c FROM Account")
            let record = try #require(page.records.first)
            #expect(record["Name"] == "Account 1")
            #expect(record["Industry__c"] == .null)
            #expect(record["name"] == nil)
            #expect(record["Number__c"] == nil)
        }
    }
}
