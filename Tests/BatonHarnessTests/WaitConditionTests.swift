import BatonCoordinator
import BatonStore
import Testing

@testable import BatonHarness

/// The lease events `baton wait` waits for, decided from the lock file's record and the
/// history, counted from the wait's start.
@Suite("baton wait: lease events")
struct WaitConditionTests {
    static func interval(_ epoch: Int64, released kind: String? = nil) -> LeaseRecord {
        LeaseRecord(
            epoch: epoch, name: "p\(epoch)", pid: 100 + Int32(epoch), acquired: epoch * 1000,
            released: kind == nil ? nil : epoch * 1000 + 500, releaseKind: kind)
    }

    static func record(
        _ epoch: Int64, released: Int64 = 0, takenOver: Int64 = 0, closing: LeaseClosing? = nil
    ) -> HeartbeatRecord {
        HeartbeatRecord(
            pid: 100 + Int32(epoch), epoch: epoch, beat: 1, termMillis: 2000, takenOver: takenOver,
            released: released, closing: closing)
    }

    static func view(
        _ latest: Int64, released: Bool = false, _ intervals: [LeaseRecord], _ record: HeartbeatRecord?
    )
        -> LeaseView
    {
        LeaseView(latestEpoch: latest, latestReleased: released, intervals: intervals, record: record)
    }

    @Test("--epoch N holds once epoch N or a later one was granted, whether before the wait or during it")
    func epoch() {
        let start = Self.view(3, [Self.interval(3)], Self.record(3))
        #expect(WaitCondition.epoch(3).holds(in: start, since: start))
        #expect(WaitCondition.epoch(2).holds(in: start, since: start))
        #expect(!WaitCondition.epoch(4).holds(in: start, since: start))
        let later = Self.view(5, [Self.interval(3, released: "released"), Self.interval(5)], Self.record(5))
        #expect(WaitCondition.epoch(4).holds(in: later, since: start))
    }

    @Test(
        "--release: the holding at the start let go, or a later one did; a release made before the wait does not count"
    )
    func release() {
        let held = Self.view(3, [Self.interval(3)], Self.record(3))
        #expect(!WaitCondition.release(from: nil).holds(in: held, since: held))
        // The holder let go: its lock file says so before any store row does.
        let letGo = Self.view(3, released: true, [Self.interval(3)], Self.record(3, released: 9000))
        #expect(WaitCondition.release(from: nil).holds(in: letGo, since: held))
        // A wait begun on a lease already let go waits for the next release.
        #expect(!WaitCondition.release(from: nil).holds(in: letGo, since: letGo))
        // The next holder took it, has not written, and carries epoch 3's release.
        let passedOn = Self.view(
            4, [Self.interval(3)],
            Self.record(4, closing: LeaseClosing(epoch: 3, at: 9000, kind: .released)))
        #expect(WaitCondition.release(from: nil).holds(in: passedOn, since: held))
        #expect(!WaitCondition.release(from: nil).holds(in: passedOn, since: letGo))
        // Epoch 4 released and recorded by epoch 5's first write.
        let recorded = Self.view(
            5, [Self.interval(4, released: "released"), Self.interval(5)], Self.record(5))
        #expect(WaitCondition.release(from: nil).holds(in: recorded, since: letGo))
        // A takeover is not a release.
        let taken = Self.view(
            5, [Self.interval(4, released: "taken-over"), Self.interval(5)], Self.record(5))
        #expect(!WaitCondition.release(from: nil).holds(in: taken, since: letGo))
    }

    @Test(
        "--takeover: a holding from the start's on was taken over (by the lock file or the history); a release is not one"
    )
    func takeover() {
        let held = Self.view(3, [Self.interval(2, released: "taken-over"), Self.interval(3)], Self.record(3))
        // Epoch 2's takeover happened before the wait.
        #expect(!WaitCondition.takeover(from: nil).holds(in: held, since: held))
        // Epoch 4 took over epoch 3 from a frozen holder: the record says so at once.
        let frozen = Self.view(4, [Self.interval(3)], Self.record(4, takenOver: 3))
        #expect(WaitCondition.takeover(from: nil).holds(in: frozen, since: held))
        // Epoch 3's holder died: the next took a free lock, closing 3 as taken over.
        let died = Self.view(
            4, [Self.interval(3)], Self.record(4, closing: LeaseClosing(epoch: 3, at: 9000, kind: .takenOver))
        )
        #expect(WaitCondition.takeover(from: nil).holds(in: died, since: held))
        // Recorded in the history by a later holder's first write.
        let recorded = Self.view(
            6,
            [
                Self.interval(3, released: "released"), Self.interval(4, released: "taken-over"),
                Self.interval(6),
            ],
            Self.record(6))
        #expect(WaitCondition.takeover(from: nil).holds(in: recorded, since: held))
        let released = Self.view(
            4, [Self.interval(3)], Self.record(4, closing: LeaseClosing(epoch: 3, at: 9000, kind: .released)))
        #expect(!WaitCondition.takeover(from: nil).holds(in: released, since: held))
    }

    @Test("a lease nobody has taken yet: --takeover and --release wait, --epoch 1 waits for the first grant")
    func fresh() {
        let none = Self.view(0, [], nil)
        #expect(!WaitCondition.takeover(from: nil).holds(in: none, since: none))
        #expect(!WaitCondition.release(from: nil).holds(in: none, since: none))
        #expect(!WaitCondition.epoch(1).holds(in: none, since: none))
        let first = Self.view(1, [], Self.record(1))
        #expect(WaitCondition.epoch(1).holds(in: first, since: none))
        #expect(!WaitCondition.takeover(from: nil).holds(in: first, since: none))
    }
}
