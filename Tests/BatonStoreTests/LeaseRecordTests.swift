import BatonStore
import Foundation
import Testing

@Suite("Lease history and fencing")
struct LeaseRecordTests {
    /// A holding as a lease grants it: `epoch` over the store's `previous`.
    static func fence(
        _ store: SharedStore, _ epoch: Int64, over previous: Int64, holder: String = "host",
        pid: Int32 = getpid(),
        closing: LeaseClosing? = nil, stillHeld: @escaping @Sendable () -> Bool = { true }
    ) -> LeaseFence {
        LeaseFence(
            store: store, epoch: epoch, holder: holder, pid: pid, granted: WallClock.nowMillis(),
            previous: previous,
            closing: closing, stillHeld: stillHeld)
    }

    @Test("epochs increase, history closes, and a fenced write with a stale epoch rolls back")
    func epochsAndFencing() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        let first = Self.fence(store, 1, over: 0, pid: 1)
        try store.write(first) { try $0.upsert(["a": 1], into: "s") }
        #expect(first.isRecorded)
        // The holder dies without releasing; the next holder's first write closes its interval.
        let second = Self.fence(store, 2, over: 1, holder: "ext", pid: 2)
        try store.write(second) { try $0.upsert(["a": 2], into: "s") }
        #expect {
            try store.write(first) { try $0.upsert(["a": 3], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(try store.count(in: "s") == 2)
        // The third holder learned from the lock file that the second let go, and when.
        let releasedAt = WallClock.nowMillis()
        let third = Self.fence(
            store, 3, over: 2, holder: "host",
            closing: LeaseClosing(epoch: 2, at: releasedAt, kind: .released))
        try store.write(third) { try $0.upsert(["a": 4], into: "s") }
        let history = try store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [1, 2, 3])
        #expect(history.map(\.releaseKind) == ["taken-over", "released", nil])
        #expect(history[1].released == releasedAt)
        #expect(history[2].acquired >= releasedAt)
    }

    @Test("a turn of the lease costs no transaction of its own: the first write records the holding")
    func holdingRecordedByFirstWrite() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        func snapshot() throws -> (Int64, Int, Int) {
            try store.read {
                (try $0.changeSequence(), try $0.commitLog().count, try $0.leaseHistory().count)
            }
        }
        let before = try snapshot()
        let fence = Self.fence(store, 1, over: 0)
        // Granting writes nothing.
        #expect(try snapshot() == before)
        #expect(!fence.isRecorded)
        try store.write(fence) { try $0.upsert(["a": 1], into: "s") }
        let after = try snapshot()
        // One commit: the data and the holding together.
        #expect(after == (before.0 + 1, before.1 + 1, before.2 + 1))
        #expect(try store.read { try $0.leaseEpoch() } == 1)
        #expect(try store.read { try $0.commitLog().last?.fencedEpoch } == 1)
        try store.write(fence) { try $0.upsert(["a": 2], into: "s") }
        #expect(try store.read { try $0.leaseHistory().count } == before.2 + 1)
    }

    @Test(
        "a holding whose lock was replaced, or whose store epoch moved, before its first write never records")
    func unrecordedHoldingFenced() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        let replaced = Self.fence(store, 1, over: 0, stillHeld: { false })
        #expect {
            try store.write(replaced) { try $0.upsert(["a": 1], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        // A taker recorded epoch 2 meanwhile: a holder granted over epoch 0 can never commit.
        let taker = Self.fence(store, 2, over: 0, holder: "ext")
        try store.write(taker) { try $0.upsert(["a": 2], into: "s") }
        let late = Self.fence(store, 1, over: 0)
        #expect {
            try store.write(late) { try $0.upsert(["a": 3], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(!late.isRecorded)
        #expect(try store.read { try $0.leaseHistory() }.map(\.epoch) == [2])
        #expect(try store.count(in: "s") == 1)
    }

    @Test(
        "an interval with no known release ends at the next holder's first write, after its own last commit")
    func unknownReleaseEndsAtFirstWrite() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        let old = Self.fence(store, 1, over: 0, holder: "old")
        try store.write(old) { try $0.upsert(["a": 1], into: "s") }
        // The next holder was granted a lock a second ago (say on a lock file recreated after a
        // deletion) while the old one, unaware, still commits under its epoch.
        let next = LeaseFence(
            store: store, epoch: 2, holder: "next", pid: getpid(), granted: WallClock.nowMillis() - 1000,
            previous: 1,
            closing: nil, stillHeld: { true })
        try store.write(old) { try $0.upsert(["a": 2], into: "s") }
        let lastOld = try #require(try store.read { try $0.commitLog().last?.at })
        try store.write(next) { try $0.upsert(["a": 3], into: "s") }
        let history = try store.read { try $0.leaseHistory() }
        let released = try #require(history.first?.released)
        #expect(released >= lastOld, "the old interval ended at \(released), before its commit at \(lastOld)")
        #expect(history.last?.acquired ?? 0 >= released)
        #expect(history.first?.releaseKind == "taken-over")
        // From the next holder's commit on, the old epoch is fenced.
        #expect(throws: StoreError.self) {
            try store.write(old) { try $0.upsert(["a": 4], into: "s") }
        }
    }

    @Test("a first write whose commit fails leaves the holding unrecorded; the next write records it")
    func failedFirstWriteRecordsNothing() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        let fence = Self.fence(store, 1, over: 0)
        for kind in StorageFaults.Kind.allCases {
            store.injected.failWrite(1, with: kind)
            #expect(throws: StoreError.self) {
                try store.write(fence) { try $0.upsert(["a": 1], into: "s") }
            }
            #expect(!fence.isRecorded)
            #expect(try store.read { try $0.leaseHistory() }.isEmpty)
        }
        try store.write(fence) { try $0.upsert(["a": 1], into: "s") }
        #expect(fence.isRecorded)
        #expect(try store.read { try $0.leaseHistory() }.map(\.epoch) == [1])
    }

    @Test(
        "every commit is logged with the current epoch, its fence and the process; a rolled-back one is not")
    func commitLog() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        try unfenced.write { try $0.upsert(["a": 0], into: "s") }
        let stale = Self.fence(store, 1, over: 0)
        try store.write(stale) { try $0.upsert(["a": 1], into: "s") }
        let fence = Self.fence(store, 2, over: 1)
        try store.write(fence) { try $0.upsert(["a": 1], into: "s") }
        let epoch = fence.epoch
        #expect(throws: StoreError.self) {
            try store.write(stale) { try $0.upsert(["a": 2], into: "s") }
        }
        let (log, sequence) = try store.read { (try $0.commitLog(), try $0.changeSequence()) }
        #expect(log.map(\.sequence) == Array(1...sequence))
        #expect(log.last?.epoch == epoch)
        #expect(log.last?.fencedEpoch == epoch)
        #expect(log.allSatisfy { $0.pid == getpid() })
        #expect(log.first?.epoch == 0)
    }
}
