import BatonStore
import BatonTestSupport
import Foundation
import GRDB
import Logging
import Testing

/// The store's lease epoch is its history's newest epoch. A store written before that kept the
/// epoch in a single-row `lease` table as well; opening it migrates it in place.
@Suite("Lease epoch in the history")
struct LeaseEpochMigrationTests {
    /// A store as a Baton before the migration left it: the history recorded up to epoch 3, and
    /// the `lease` table holding `tableEpoch`.
    static func storeBeforeMigration(tableEpoch: Int64) throws -> (TemporaryDirectory, SharedDirectory) {
        let temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path + "/d")
        do {
            let fixture = try UnfencedStore.open(directory: directory, logger: Logger(label: "test"))
            try fixture.registerSoup("s", indexSpecs: [])
            for epoch in Int64(1)...3 {
                let fence = LeaseRecordTests.fence(fixture.store, epoch, over: epoch - 1)
                try fixture.store.write(fence) { try $0.upsert(["n": .int(epoch)], into: "s") }
            }
        }
        let file = try DatabaseQueue(path: directory.storePath)
        try file.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE lease (id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL);
                    INSERT INTO lease (id, epoch) VALUES (1, ?);
                    DELETE FROM grdb_migrations WHERE identifier = 'v5-lease-epoch-in-history';
                    """, arguments: [tableEpoch])
        }
        return (temp, directory)
    }

    static func tables(_ directory: SharedDirectory) throws -> [String] {
        try DatabaseQueue(path: directory.storePath).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    }

    @Test("a store whose lease table agrees with its history loses the table and keeps its epoch")
    func migratesAgreeingStore() throws {
        let (temp, directory) = try Self.storeBeforeMigration(tableEpoch: 3)
        _ = temp
        #expect(try Self.tables(directory).contains("lease"))
        let reopened = try UnfencedStore.open(
            directory: directory, create: false, logger: Logger(label: "test"))
        let store = reopened.store
        #expect(try !Self.tables(directory).contains("lease"))
        #expect(try store.read { try $0.leaseEpoch() } == 3)
        #expect(try store.read { try $0.leaseHistory() }.map(\.epoch) == [1, 2, 3])
        // Fencing goes on from there: a holding over epoch 3 writes, a stale one does not.
        let next = LeaseRecordTests.fence(store, 4, over: 3)
        try store.write(next) { try $0.upsert(["n": 4], into: "s") }
        #expect(try store.read { try $0.leaseEpoch() } == 4)
        let stale = LeaseRecordTests.fence(store, 4, over: 3)
        #expect {
            try store.write(stale) { try $0.upsert(["n": 5], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
    }

    @Test(
        "a lease table ahead of the history carries its epoch over as a closed interval: no epoch is reused")
    func carriesHigherEpochOver() throws {
        let (temp, directory) = try Self.storeBeforeMigration(tableEpoch: 7)
        _ = temp
        let reopened = try UnfencedStore.open(
            directory: directory, create: false, logger: Logger(label: "test"))
        let store = reopened.store
        #expect(try !Self.tables(directory).contains("lease"))
        #expect(try store.read { try $0.leaseEpoch() } == 7)
        let history = try store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [1, 2, 3, 7])
        let carried = try #require(history.last)
        #expect(carried.releaseKind == "taken-over" && carried.released != nil)
        #expect(carried.acquired >= history[2].acquired)
        // A holding that took epoch 5 (under the old table's 4) is stale; one over 7 writes.
        let stale = LeaseRecordTests.fence(store, 5, over: 4)
        #expect {
            try store.write(stale) { try $0.upsert(["n": 5], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        let next = LeaseRecordTests.fence(store, 8, over: 7)
        try store.write(next) { try $0.upsert(["n": 8], into: "s") }
        #expect(try store.read { try $0.leaseHistory() }.map(\.epoch) == [1, 2, 3, 7, 8])
    }
}
