import BatonStore
import Foundation
import Testing

@Suite("WAL checkpoints")
struct CheckpointTests {
    /// Writes about 2,500 WAL frames (pages) of new records, 50 records per transaction.
    func writePages(_ store: SharedStore) throws {
        let filler = String(repeating: "x", count: 3000)
        for batch in 0..<50 {
            try store.writeUnleased { transaction in
                for index in 0..<50 {
                    try transaction.upsert(
                        ["n": .int(Int64(batch * 50 + index)), "f": .string(filler)], into: "s")
                }
            }
        }
    }

    func fileSize(_ store: SharedStore) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: store.directory.storePath)
        return (attributes[.size] as? Int) ?? 0
    }

    @Test("without a hold, commits checkpoint as SQLite's own rule does (the database file grows)")
    func checkpointsByDefault() throws {
        let fixture = try StoreFixture()
        try fixture.store.registerSoup("s", indexSpecs: [])
        let before = try fileSize(fixture.store)
        try writePages(fixture.store)
        #expect(try fileSize(fixture.store) > before + 1_000_000)
    }

    @Test("held (as by the lease holder), checkpoints wait for the release and run then")
    func heldUntilRelease() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSoup("s", indexSpecs: [])
        let before = try fileSize(store)
        store.holdCheckpoints()
        try writePages(store)
        // Everything is still in the WAL: the database file has not been written.
        #expect(try fileSize(store) == before)
        #expect(try store.count(in: "s") == 2500)
        store.releaseCheckpoints()
        #expect(try fileSize(store) > before + 1_000_000)
    }
}
