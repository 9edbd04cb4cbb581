import Foundation
import GRDB
import Logging
import Synchronization
import Testing

@testable import BatonStore

@Suite("The fence's epoch from memory while nothing changed the store")
struct KnownLeaseEpochTests {
    /// Counts the queries of the store's lease epoch made on `store`'s write connection.
    final class EpochQueries: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }

        init(_ store: SharedStore) {
            store.pool.writeWithoutTransaction { db in
                db.trace { [self] event in
                    if case .statement(let statement) = event,
                        statement.sql.contains("SELECT MAX(epoch) FROM lease_history")
                    {
                        count.add(1, ordering: .relaxed)
                    }
                }
            }
        }
    }

    /// A store with a soup `s`, and a second connection to it, as another process would have.
    func storeAndOtherConnection() throws -> (fixture: StoreFixture, other: UnfencedStore) {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        return (
            fixture, try UnfencedStore.open(directory: fixture.store.directory, logger: Logger(label: "test"))
        )
    }

    @Test("a holding's writes query the epoch only after another connection changed the store")
    func queriedOnlyAfterAChange() throws {
        let (fixture, other) = try storeAndOtherConnection()
        let store = fixture.store
        let queries = EpochQueries(store)
        let fence = LeaseRecordTests.fence(store, 1, over: 0)
        // The other connection commits before the holding's first write.
        try other.write { try $0.upsert(["b": 1], into: "s") }

        // The first write reads the epoch to record the holding; the next ones know it.
        try store.write(fence) { try $0.upsert(["a": 1], into: "s") }
        #expect(queries.value == 1)
        for value in 2...4 { try store.write(fence) { try $0.upsert(["a": .int(Int64(value))], into: "s") } }
        #expect(queries.value == 1)

        // The other connection commits again: the next write asks the store again, once.
        try other.write { try $0.upsert(["b": 2], into: "s") }
        try store.write(fence) { try $0.upsert(["a": 5], into: "s") }
        #expect(queries.value == 2)
        try store.write(fence) { try $0.upsert(["a": 6], into: "s") }
        #expect(queries.value == 2)

        // Another handle records the next epoch (a takeover): the old holding's write fails its
        // fence and leaves nothing.
        let next = LeaseRecordTests.fence(other.store, 2, over: 1, holder: "ext")
        try other.store.write(next) { try $0.upsert(["b": 3], into: "s") }
        let count = try store.count(in: "s")
        #expect {
            try store.write(fence) { try $0.upsert(["a": 7], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(try store.count(in: "s") == count)
        #expect(queries.value == 3)
    }

    @Test("a takeover by another connection is seen by every later write, never from memory")
    func takeoverBetweenWrites() throws {
        let (fixture, other) = try storeAndOtherConnection()
        let store = fixture.store
        var epoch: Int64 = 0
        var stale: [LeaseFence] = []
        // Holdings alternate between the two connections; each one's earlier fences must fail.
        for round in 0..<6 {
            let handle = round.isMultiple(of: 2) ? store : other.store
            epoch += 1
            let fence = LeaseRecordTests.fence(handle, epoch, over: epoch - 1)
            try handle.write(fence) { try $0.upsert(["r": .int(Int64(round))], into: "s") }
            try handle.write(fence) { try $0.upsert(["r": .int(Int64(round)), "again": true], into: "s") }
            for old in stale where old.store === handle {
                #expect {
                    try handle.write(old) { try $0.upsert(["stale": true], into: "s") }
                } throws: { ($0 as? StoreError)?.code == .staleEpoch }
            }
            stale.append(fence)
        }
        #expect(try store.query(.all, in: "s").allSatisfy { $0.record["stale"] == nil })
        let commits = try store.read { try $0.commitLog() }
        #expect(commits.allSatisfy { $0.epoch == $0.fencedEpoch || $0.fencedEpoch == nil })
    }

    @Test(
        "inside a transaction, the data version is the one read after the connection's last commit until another connection commits"
    )
    func dataVersionMoves() throws {
        let (fixture, other) = try storeAndOtherConnection()
        let store = fixture.store
        var written: Int64 = 0
        /// A commit on the store's write connection, and the data version read right after it.
        func commit() throws -> UInt32? {
            written += 1
            try fixture.unfenced.write { [written] in try $0.upsert(["a": .int(written)], into: "s") }
            return store.pool.writeWithoutTransaction { SharedStore.dataVersion($0) }
        }
        /// The data version inside the next write transaction on that connection.
        func inside() throws -> UInt32? {
            try store.pool.writeWithoutTransaction { db in
                var version: UInt32?
                try db.inTransaction(.immediate) {
                    version = SharedStore.dataVersion(db)
                    return .rollback
                }
                return version
            }
        }
        let first = try #require(try commit())
        #expect(try inside() == first)
        let second = try #require(try commit())
        #expect(second != first)
        #expect(try inside() == second)
        let third = try #require(try commit())
        try other.write { try $0.upsert(["b": 1], into: "s") }
        #expect(try inside() != third)
    }
}
