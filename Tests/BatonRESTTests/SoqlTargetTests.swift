import BatonREST
import BatonSync
import BatonTestSupport
import Testing

@Suite("SOQL sync down target")
struct SoqlTargetTests {
    @Test("the first page is small (the first commit comes soon), the next ones have the batch size")
    func pageSizes() async throws {
        try await withLiveServer { _, client in
            try await client.adminSeed(type: "Account", count: 1200)
            let target = try SoqlSyncDownTarget(
                client: client, query: "SELECT Id, Name FROM Account", batchSize: 500)
            var page = try await target.startFetch(.everything)
            var sizes = [page.records.count]
            while let next = try await target.continueFetch(after: page) {
                sizes.append(next.records.count)
                page = next
            }
            #expect(sizes == [SoqlSyncDownTarget.firstPageSize, 500, 500])

            let small = try SoqlSyncDownTarget(client: client, query: "SELECT Id FROM Account", batchSize: 50)
            #expect(try await small.startFetch(.everything).records.count == 50)
        }
    }

    @Test("a query that counts records (SELECT COUNT()) is refused as a sync down target, naming why")
    func countRefused() throws {
        let client = RESTClient(baseURL: "http://127.0.0.1:1", token: "t")
        #expect {
            try SoqlSyncDownTarget(client: client, query: "SELECT COUNT() FROM Account")
        } throws: { error in
            (error as? SyncError)?.code == .invalidTarget && "\(error)".contains("COUNT()")
        }
        #expect {
            try SoqlSyncDownTarget(client: client, query: "SELECT MAX(LastModifiedDate) FROM Account")
        } throws: { error in
            (error as? SyncError)?.code == .invalidTarget && "\(error)".contains("aggregates")
        }
    }
}
