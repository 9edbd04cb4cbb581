import Foundation
import GRDB
import Logging
import Synchronization
import Testing

@testable import BatonStore

@Suite("The fence across connections")
struct FenceAcrossConnectionsTests {
    /// A store with a soup `s`, and a second connection to it, as another process would have.
    func storeAndOtherConnection() throws -> (fixture: StoreFixture, other: UnfencedStore) {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        return (
            fixture, try UnfencedStore.open(directory: fixture.store.directory, logger: Logger(label: "test"))
        )
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
}
