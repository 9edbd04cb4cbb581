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
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: dir), logger: Logger(label: "test"))
        let store = unfenced.store
        try unfenced.registerSoup("notes", indexSpecs: [IndexSpec(path: "n", type: .integer)])
        try unfenced.registerSoup("other", indexSpecs: [])
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

    @Test(
        "a reader that starts after the writer begins at the current sequence; a burst is coalesced, never past its last value; a recreated D/changes still rings"
    )
    func lateReaderBurstAndRecreatedDoorbell() async throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        let writer = try UnfencedStore.open(directory: shared, logger: Logger(label: "writer"))
        try writer.registerSoup("notes", indexSpecs: [])
        for n in 0..<5 {
            try await writer.write { _ = try $0.upsert(["n": .int(Int64(n))], into: "notes") }
        }
        let reader = try SharedStore.open(directory: shared, logger: Logger(label: "reader"))
        var changes = try reader.changes().makeAsyncIterator()
        let start = try #require(await changes.next())
        #expect(start == (try writer.store.changeSequence()))

        // A burst: the reader may hear of fewer, in order, and always of the last.
        for n in 0..<50 {
            try await writer.write { _ = try $0.upsert(["n": .int(Int64(n))], into: "notes") }
        }
        let end = start + 50
        var heard: [Int64] = []
        while heard.last ?? start < end { heard.append(try #require(await changes.next())) }
        #expect(heard.last == end)
        #expect(heard == heard.sorted() && Set(heard).count == heard.count)
        #expect(heard.count <= 50)

        // The doorbell file deleted (a shell's `rm`): the next commit puts a new one in place.
        try FileManager.default.removeItem(atPath: shared.changesPath)
        try await writer.write { _ = try $0.upsert(["n": 99], into: "notes") }
        #expect(try #require(await changes.next()) == end + 1)
    }
}
