import BatonStore
import Foundation
import Testing

@Suite("Lease table and fencing")
struct LeaseRecordTests {
    @Test("epochs increase, history closes, and a fenced write with a stale epoch rolls back")
    func epochsAndFencing() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSoup("s", indexSpecs: [])
        let first = try store.write { try $0.beginLeaseEpoch(name: "host", pid: 1) }
        try store.write(fencedBy: first) { try $0.upsert(["a": 1], into: "s") }
        // The holder dies without releasing; the next taker closes its interval.
        let second = try store.write { try $0.beginLeaseEpoch(name: "ext", pid: 2) }
        #expect(second == first + 1)
        #expect {
            try store.write(fencedBy: first) { try $0.upsert(["a": 2], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(try store.count(in: "s") == 1)
        try store.write { try $0.endLeaseEpoch(second) }
        let history = try store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [first, second])
        #expect(history.map(\.releaseKind) == ["taken-over", "released"])
        #expect(history.allSatisfy { $0.released != nil })
    }

    @Test("taking and releasing the lease are not data commits: no change-sequence bump, no log row")
    func bookkeepingIsNotLogged() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSoup("s", indexSpecs: [])
        let before = try store.read { (try $0.changeSequence(), try $0.commitLog().count) }
        let epoch = try store.beginLeaseEpoch(name: "host", pid: getpid()).epoch
        try store.endLeaseEpoch(epoch)
        let after = try store.read { (try $0.changeSequence(), try $0.commitLog().count) }
        #expect(after == before)
        let history = try store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [epoch])
        #expect(history.first?.releaseKind == "released")
        // The next data commit is logged under the epoch taken.
        try store.write(fencedBy: epoch) { try $0.upsert(["a": 1], into: "s") }
        #expect(try store.read { try $0.commitLog().last?.fencedEpoch } == epoch)
    }

    @Test(
        "every commit is logged with the current epoch, its fence and the process; a rolled-back one is not")
    func commitLog() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSoup("s", indexSpecs: [])
        let epoch = try store.write { try $0.beginLeaseEpoch(name: "host", pid: getpid()) }
        try store.write(fencedBy: epoch) { try $0.upsert(["a": 1], into: "s") }
        #expect(throws: StoreError.self) {
            try store.write(fencedBy: epoch - 1) { try $0.upsert(["a": 2], into: "s") }
        }
        let (log, sequence) = try store.read { (try $0.commitLog(), try $0.changeSequence()) }
        #expect(log.map(\.sequence) == Array(1...sequence))
        #expect(log.last?.epoch == epoch)
        #expect(log.last?.fencedEpoch == epoch)
        #expect(log.allSatisfy { $0.pid == getpid() })
        #expect(log.first?.epoch == 0)
    }
}
