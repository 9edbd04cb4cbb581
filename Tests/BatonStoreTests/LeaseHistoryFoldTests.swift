import BatonStore
import Foundation
import Testing

@Suite("Lease history fold")
struct LeaseHistoryFoldTests {
    /// Holdings of the lease in turn, `host` and `ext`, each recorded by its first write.
    struct Holdings {
        let store: SharedStore
        var epoch: Int64 = 0

        /// The next holding writes `body` (its first write records it); `pid` is the holder's.
        mutating func hold(
            pid: Int32 = getpid(), closing: LeaseClosing? = nil, _ body: (StoreTransaction) throws -> Void
        ) throws {
            let fence = LeaseRecordTests.fence(
                store, epoch + 1, over: epoch, holder: epoch % 2 == 0 ? "host" : "ext", pid: pid,
                closing: closing)
            try store.write(fence, body)
            epoch += 1
        }

        /// The next holding writes one record.
        mutating func hold(pid: Int32 = getpid(), closing: LeaseClosing? = nil) throws {
            let n = epoch + 1
            try hold(pid: pid, closing: closing) { try $0.upsert(["n": .int(n)], into: "s") }
        }

        func sizes() throws -> (intervals: Int, fold: LeaseHistoryFold?) {
            try store.read { (try $0.leaseHistoryCount(), try $0.leaseHistoryFold()) }
        }
    }

    @Test(
        "past its limit the history folds its oldest intervals in the transaction that records a holding, and never holds more"
    )
    func foldsPastTheLimit() throws {
        let fixture = try StoreFixture()
        var holdings = Holdings(store: fixture.store)
        try holdings.hold {
            try $0.setLeaseHistoryLimit(10)
            try $0.registerSoup("s", indexSpecs: [])
        }
        for n in 2...100 {
            try holdings.hold()
            let (intervals, fold) = try holdings.sizes()
            #expect(intervals <= 10, "after \(n) holdings")
            #expect(intervals + (fold?.intervals ?? 0) == n, "after \(n) holdings")
        }
        let (history, fold, sequence) = try fixture.store.read {
            (try $0.leaseHistory(), try #require(try $0.leaseHistoryFold()), try $0.changeSequence())
        }
        // Folding cost no transaction of its own: one commit per holding.
        #expect(sequence == 100)
        #expect(fold.firstEpoch == 1 && fold.lastEpoch + 1 == history.first?.epoch)
        #expect(history.last?.epoch == 100)
        #expect(fold.violations == 0 && fold.strictViolations == 0 && fold.problems.isEmpty)
        // Each folded interval's commit was still in the log, and checked.
        #expect(fold.commits == fold.intervals && fold.commitsOutsideLease == 0)
        #expect(fold.lastReleased != nil && fold.firstAcquired <= fold.lastReleased!)
    }

    @Test("a fold keeps the violations of the intervals it folds, word for word")
    func foldKeepsViolations() throws {
        let fixture = try StoreFixture()
        var holdings = Holdings(store: fixture.store)
        try holdings.hold {
            try $0.setLeaseHistoryLimit(10)
            try $0.registerSoup("s", indexSpecs: [])
        }
        // Epoch 2's holder is another process, yet this one commits under its fence.
        try holdings.hold(pid: 999_999)
        // Epoch 3's holder lets go, then commits outside the lease before anyone else takes it.
        try holdings.hold()
        let released = WallClock.nowMillis()
        while WallClock.nowMillis() <= released {}
        try fixture.unfenced.write { try $0.upsert(["late": true], into: "s") }
        try holdings.hold(closing: LeaseClosing(epoch: 3, at: released, kind: .released))
        for _ in 0..<20 { try holdings.hold() }

        let (history, folded) = try holdings.sizes()
        let fold = try #require(folded)
        #expect(history <= 10 && fold.epochs.contains(2) && fold.epochs.contains(3))
        #expect(fold.violations == 2 && fold.strictViolations == 0 && fold.commitsOutsideLease == 1)
        try #require(fold.problems.map(\.epoch) == [2, 3])
        #expect(fold.problems.allSatisfy { !$0.strictOnly })
        #expect(fold.problems[0].problem.contains("pid 999999"))
        #expect(fold.problems[1].problem.contains("after the lease ended at \(released)"))
    }

    @Test("a holding whose write fails records nothing and folds nothing; written again, it folds")
    func failedWriteFoldsNothing() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        var holdings = Holdings(store: store)
        try holdings.hold {
            try $0.setLeaseHistoryLimit(10)
            try $0.registerSoup("s", indexSpecs: [])
        }
        for _ in 2...10 { try holdings.hold() }
        #expect(try holdings.sizes().intervals == 10)
        #expect(try holdings.sizes().fold == nil)

        let fence = LeaseRecordTests.fence(store, 11, over: 10)
        store.injected.failWrite(1, with: .full)
        #expect {
            try store.write(fence) { try $0.upsert(["n": 11], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .database }
        #expect(!fence.isRecorded)
        #expect(try holdings.sizes().intervals == 10)
        #expect(try holdings.sizes().fold == nil)
        #expect(try store.read { try $0.leaseEpoch() } == 10)

        try store.write(fence) { try $0.upsert(["n": 11], into: "s") }
        #expect(fence.isRecorded)
        let (intervals, fold) = try holdings.sizes()
        #expect(intervals == 9 && fold?.intervals == 2 && fold?.lastEpoch == 2)
    }

    @Test("the limit is a store setting: checked, kept only once written, and a smaller one folds at once")
    func limitSetting() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        var holdings = Holdings(store: store)
        #expect(try store.read { try $0.leaseHistoryLimit() } == LeaseHistoryFold.defaultLimit)
        try holdings.hold { try $0.registerSoup("s", indexSpecs: []) }
        for _ in 2...30 { try holdings.hold() }
        #expect(try holdings.sizes().intervals == 30)

        #expect {
            try holdings.hold { try $0.setLeaseHistoryLimit(9) }
        } throws: { ($0 as? StoreError)?.code == .invalidSetting }
        #expect(try holdings.sizes().intervals == 30)

        // A write that fails sets nothing and folds nothing.
        store.injected.failWrite(1, with: .ioError)
        #expect {
            try holdings.hold { try $0.setLeaseHistoryLimit(12) }
        } throws: { ($0 as? StoreError)?.code == .database }
        #expect(try store.read { try $0.leaseHistoryLimit() } == LeaseHistoryFold.defaultLimit)
        #expect(try holdings.sizes().intervals == 30 && holdings.sizes().fold == nil)

        try holdings.hold { try $0.setLeaseHistoryLimit(12) }
        let (intervals, fold) = try holdings.sizes()
        #expect(try store.read { try $0.leaseHistoryLimit() } == 12)
        #expect(intervals <= 12 && intervals + (fold?.intervals ?? 0) == 31)
        let size = try store.read { try LeaseHistorySize(reading: $0) }
        #expect(size.intervals == intervals && size.limit == 12 && size.folded == fold?.intervals)
        #expect(size.foldedFirstEpoch == 1 && size.commitLog == 31)
    }
}
