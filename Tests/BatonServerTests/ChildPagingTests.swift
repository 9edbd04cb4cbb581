import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Testing

/// A parent's child subquery result pages as Salesforce's does: past the child page size it holds
/// the first children, says `"done": false` and gives a `nextRecordsUrl` that the query-locator
/// route pages.
@Suite("Server child subquery paging")
struct ChildPagingTests {
    /// An account with `count` contacts (`Number__c` 1…count); the contacts' ids.
    static func account(_ name: String, contacts count: Int, _ client: RESTClient) async throws -> (
        id: String, contacts: [String]
    ) {
        let id = try await client.create(type: "Account", fields: ["Name": .string(name)])
        guard count > 0 else { return (id, []) }
        return (
            id, try await client.adminSeed(type: "Contact", count: count, fields: ["AccountId": .string(id)])
        )
    }

    /// A nested result's records, fetched raw (with their `attributes`) from the locator route.
    static func page(_ url: String, _ client: RESTClient, batchSize: Int? = nil) async throws -> JSONValue {
        try await client.send(
            .GET, url, headers: batchSize.map { [("Sforce-Query-Options", "batchSize=\($0)")] } ?? [],
            idempotent: true
        ).body
    }

    @Test(
        "past the child page size a nested result pages; following it gives every child once, in order, with only the subquery's fields",
        arguments: [(3, 10), (nil, 401)] as [(Int?, Int)])
    func pagedChildren(childPageSize: Int?, children: Int) async throws {
        try await withLiveServer(configure: { if let childPageSize { $0.childPageSize = childPageSize } }) {
            _, client in
            let size = childPageSize ?? 200
            let big = try await Self.account("A big family", contacts: children, client)
            let small = try await Self.account("B small family", contacts: 2, client)
            let none = try await Self.account("C no family", contacts: 0, client)
            let page = try await client.queryFirstPage(
                "SELECT Id, Name, (SELECT Id, Number__c FROM Contacts ORDER BY Number__c DESC) FROM Account"
                    + " WHERE Id IN ('\(big.id)', '\(small.id)', '\(none.id)') ORDER BY Name")
            #expect(page.records.map { $0["Id"]?.stringValue } == [big.id, small.id, none.id])

            let nested = try #require(page.records.first?["Contacts"])
            #expect(nested.value(atPath: "totalSize")?.intValue == Int64(children))
            #expect(nested.value(atPath: "done") == false)
            let first = nested.value(atPath: "records")?.arrayValue ?? []
            #expect(first.count == size)
            var url = nested.value(atPath: "nextRecordsUrl")?.stringValue
            #expect(url?.hasPrefix("/services/data/v60.0/query/01g") == true)
            #expect(url?.hasSuffix("-\(size)") == true)
            var served = first
            var pages = 0
            while let next = url {
                let body = try await Self.page(next, client)
                let records = body.value(atPath: "records")?.arrayValue ?? []
                #expect(body.value(atPath: "totalSize")?.intValue == Int64(children))
                #expect(records.count <= size)
                let done = body.value(atPath: "done")?.boolValue
                url = body.value(atPath: "nextRecordsUrl")?.stringValue
                #expect(done == (url == nil))
                served += records
                pages += 1
                try #require(pages <= children, "the nested pages never end")
            }
            #expect(pages == (children - size + size - 1) / size)
            // Every child once, in the subquery's order, as the subquery selects it.
            #expect(
                served.compactMap { $0.value(atPath: "Number__c")?.intValue }
                    == (1...Int64(children)).reversed())
            #expect(Set(served.compactMap { $0.value(atPath: "Id")?.stringValue }) == Set(big.contacts))
            for record in served {
                #expect(Set(record.objectValue?.keys ?? [:].keys) == ["attributes", "Id", "Number__c"])
                #expect(record.value(atPath: "attributes.type") == "Contact")
            }

            // Fewer children than a page: all of them, done, no locator; none: null.
            let few = try #require(page.records.dropFirst().first?["Contacts"]?.objectValue)
            #expect(few["totalSize"] == 2)
            #expect(few["done"] == true)
            #expect(few["nextRecordsUrl"] == nil)
            #expect(few["records"]?.arrayValue?.count == 2)
            #expect(page.records.last?["Contacts"] == .null)
        }
    }

    @Test("the server pages children at 200 unless told otherwise, as Salesforce does")
    func defaultSize() {
        #expect(ReferenceServer.Configuration(token: "t").childPageSize == 200)
    }

    @Test("a nested page takes the request's batch size, and its records count as served")
    func batchSizeAndStats() async throws {
        try await withLiveServer(configure: { $0.childPageSize = 3 }) { _, client in
            let parent = try await Self.account("Parent", contacts: 10, client)
            let page = try await client.queryFirstPage(
                "SELECT Id, (SELECT Id FROM Contacts) FROM Account WHERE Id = '\(parent.id)'")
            let url = try #require(
                page.records.first?["Contacts"]?.value(atPath: "nextRecordsUrl")?.stringValue)
            try await client.adminResetStats()
            let second = try await client.queryNextPage(url, batchSize: 5)
            #expect(second.records.count == 5)
            #expect(second.totalSize == 10)
            let next = try #require(second.nextRecordsUrl)
            #expect(next.hasSuffix("-8"))
            // Without a batch size, the child page size again (two are left).
            let third = try await client.queryNextPage(next)
            #expect(third.records.count == 2)
            #expect(third.done && third.nextRecordsUrl == nil)
            let ids = (page.records.first?["Contacts"]?.value(atPath: "records")?.arrayValue ?? []).compactMap
            {
                $0.value(atPath: "Id")?.stringValue
            }
            #expect(
                ids + (second.records + third.records).compactMap { $0["Id"]?.stringValue }
                    == parent.contacts.sorted())
            let stats = try await client.adminStats()
            #expect(stats.value(atPath: "recordsServed.Contact") == 7)
        }
    }

    @Test("a nested result's locator expires like any other: INVALID_QUERY_LOCATOR")
    func expires() async throws {
        try await withLiveServer(configure: {
            $0.childPageSize = 3
            $0.locatorLifetime = .zero
        }) { _, client in
            let parent = try await Self.account("Parent", contacts: 4, client)
            let page = try await client.queryFirstPage(
                "SELECT Id, (SELECT Id FROM Contacts) FROM Account WHERE Id = '\(parent.id)'")
            let url = try #require(
                page.records.first?["Contacts"]?.value(atPath: "nextRecordsUrl")?.stringValue)
            await #expect {
                try await client.queryNextPage(url)
            } throws: { ($0 as? RESTError)?.errorCode == "INVALID_QUERY_LOCATOR" }
        }
    }

    @Test("a page of parents with paged children keeps every nested locator and its own")
    func manyNestedLocators() async throws {
        try await withLiveServer(configure: { $0.childPageSize = 1 }) { _, client in
            // More parents in one page than the server keeps query cursors (64).
            let parents = 70
            let accounts = try await client.adminSeed(type: "Account", count: parents)
            var contacts: [String: [String]] = [:]
            for id in accounts {
                contacts[id] = try await client.adminSeed(
                    type: "Contact", count: 2, fields: ["AccountId": .string(id)])
            }
            let first = try await client.queryFirstPage(
                "SELECT Id, (SELECT Id FROM Contacts) FROM Account ORDER BY Number__c", batchSize: 66)
            #expect(first.records.count == 66)
            var seen: [String: [String]] = [:]
            var pages = [first]
            if let next = first.nextRecordsUrl { pages.append(try await client.queryNextPage(next)) }
            #expect(pages.count == 2)
            // The first page's nested locators are followed only after the second page came.
            for page in pages.reversed() {
                for record in page.records {
                    let id = try #require(record["Id"]?.stringValue)
                    let nested = try #require(record["Contacts"])
                    seen[id] = (nested.value(atPath: "records")?.arrayValue ?? []).compactMap {
                        $0.value(atPath: "Id")?.stringValue
                    }
                    let url = try #require(nested.value(atPath: "nextRecordsUrl")?.stringValue)
                    let rest = try await client.queryNextPage(url)
                    #expect(rest.done)
                    seen[id, default: []] += rest.records.compactMap { $0["Id"]?.stringValue }
                }
            }
            #expect(seen == contacts)
        }
    }
}
