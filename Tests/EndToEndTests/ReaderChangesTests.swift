import BatonCoordinator
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

/// A reader in one process sees the commits of a writer in another: the change sequence, and
/// a query observation that yields only when its result changes.
@Suite("Readers see other processes' commits", .timeLimit(.minutes(2)))
struct ReaderChangesTests {
    @Test(
        "the change sequence and a query observation follow another process's writes; the last value is never missed"
    )
    func followsAnotherProcess() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/d"
        let store = try SharedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        try store.registerSoup("notes", indexSpecs: [IndexSpec(path: "n", type: .integer)])
        try store.registerSoup("other", indexSpecs: [])
        var sequence = try store.changes().makeAsyncIterator()
        var observed = try store.observe(.all, in: "notes").makeAsyncIterator()
        let start = try #require(await sequence.next())
        #expect(try #require(await observed.next()).isEmpty)

        // Another process writes three records in three transactions: the reader ends on the
        // last sequence, whatever it coalesced on the way.
        for n in 1...3 {
            let result = try await BatonProcess.run([
                "store", "upsert", "--dir", dir, "--unleased", "--soup", "notes", "{\"n\":\(n)}",
            ])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let target = try store.changeSequence()
        #expect(target == start + 3)
        var last = start
        while last < target { last = try #require(await sequence.next()) }
        #expect(last == target)
        var entries = try #require(await observed.next())
        while entries.count < 3 { entries = try #require(await observed.next()) }
        #expect(Set(entries.compactMap { $0.record["n"]?.intValue }) == [1, 2, 3])

        // A commit that leaves the query's result as it was moves the sequence, not the
        // observation; the next one that changes it does.
        let other = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--unleased", "--soup", "other", "{\"x\":1}",
        ])
        #expect(other.status == 0)
        #expect(try #require(await sequence.next()) == target + 1)
        let fourth = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--unleased", "--soup", "notes", "{\"n\":4}",
        ])
        #expect(fourth.status == 0)
        let next = try #require(await observed.next())
        #expect(next.count == 4)
    }
}
