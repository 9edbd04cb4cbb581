import BatonStore
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
}
