import BatonCoordinator
import BatonStore
import Foundation
import Logging
import Testing

@Suite("Hand-over state machine (no I/O)")
struct HandOverStateMachineTests {
    @Test("foreground asks for the lease; getting it makes a writer")
    func foregroundToWriter() {
        var machine = HandOverStateMachine()
        #expect(machine.lifecycle(.foreground) == [.publish, .startAcquiring])
        #expect(machine.phase == .waitingForLease)
        #expect(machine.lifecycle(.foreground) == [])
        #expect(machine.leaseAcquired(.testing(1)) == [.becomeWriter, .publish])
        #expect(machine.phase == .writer)
    }

    @Test("background stops and releases; released returns to background")
    func backgroundReleases() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired(.testing(1))
        #expect(machine.lifecycle(.background) == [.publish, .stopAndRelease(.background)])
        #expect(machine.phase == .releasing)
        #expect(machine.lifecycle(.background) == [])
        #expect(machine.released() == [.publish])
        #expect(machine.phase == .background)
    }

    @Test("foreground again while releasing asks for the lease again once released")
    func flipDuringRelease() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired(.testing(1))
        _ = machine.lifecycle(.background)
        #expect(machine.lifecycle(.foreground) == [])
        #expect(machine.released() == [.publish, .startAcquiring])
        #expect(machine.phase == .waitingForLease)
    }

    @Test("background while waiting cancels the wait; a late lease is released unused")
    func cancelWhileWaiting() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        #expect(machine.lifecycle(.background) == [.cancelAcquiring, .publish])
        #expect(machine.leaseAcquired(.testing(1)) == [.releaseUnused])
        #expect(machine.phase == .background)
    }

    @Test("a writer yields to a higher priority and then waits to retake the lease")
    func priorityYield() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired(.testing(1))
        #expect(machine.higherPriorityWaiting() == [.publish, .stopAndRelease(.yield)])
        #expect(machine.released() == [.publish, .startAcquiring])
        #expect(machine.phase == .waitingForLease)
        // Not a writer: nothing to yield.
        #expect(machine.higherPriorityWaiting() == [])
    }

    @Test("shutdown releases a held lease, then exits; ignores later signals", arguments: [true, false])
    func shutdown(asWriter: Bool) {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        if asWriter {
            _ = machine.leaseAcquired(.testing(1))
            #expect(machine.shutdown() == [.publish, .stopAndRelease(.shutdown)])
            #expect(machine.lifecycle(.foreground) == [])
            #expect(machine.released() == [.publish, .exit])
        } else {
            #expect(machine.shutdown() == [.cancelAcquiring, .publish, .exit])
        }
        #expect(machine.phase == .finished)
    }
}

@Suite("Lease audit")
struct LeaseAuditTests {
    @Test("clean, overlapping, unreleased and non-increasing histories")
    func audit() {
        func record(_ epoch: Int64, _ acquired: Int64, _ released: Int64?) -> LeaseRecord {
            LeaseRecord(
                epoch: epoch, name: "p", pid: 1, acquired: acquired, released: released, releaseKind: nil)
        }
        #expect(LeaseAudit.check([record(1, 0, 10), record(2, 10, 20), record(3, 25, nil)]).isEmpty)
        #expect(LeaseAudit.check([record(1, 0, 15), record(2, 10, 20)]).count == 1)
        #expect(LeaseAudit.check([record(1, 0, nil), record(2, 10, 20)]).count == 1)
        #expect(LeaseAudit.check([record(2, 0, 5), record(2, 10, 20)]).count == 1)
    }

    @Test("commits by the holder pass; a stranger, a stale fence, a late or out-of-order commit fail")
    func commitAudit() {
        let history = [
            LeaseRecord(
                epoch: 1, name: "host", pid: 10, acquired: 100, released: 200, releaseKind: "released"),
            LeaseRecord(epoch: 2, name: "ext", pid: 20, acquired: 210, released: nil, releaseKind: nil),
        ]
        func commit(_ sequence: Int64, epoch: Int64, fenced: Int64?, pid: Int32, at: Int64) -> CommitRecord {
            CommitRecord(sequence: sequence, epoch: epoch, fencedEpoch: fenced, pid: pid, at: at)
        }
        let clean = [
            commit(1, epoch: 0, fenced: nil, pid: 5, at: 50),
            commit(2, epoch: 1, fenced: nil, pid: 10, at: 100),
            commit(3, epoch: 1, fenced: 1, pid: 10, at: 150),
            commit(4, epoch: 2, fenced: 2, pid: 20, at: 300),
        ]
        let report = LeaseAudit.checkCommits(clean, history: history, strict: false)
        #expect(report.violations.isEmpty)
        #expect(report.unleased == 1)
        #expect(report.checked == 4)
        #expect(LeaseAudit.checkCommits(clean, history: history, strict: true).violations.count == 1)

        let stranger = commit(5, epoch: 2, fenced: 2, pid: 99, at: 310)
        let stale = commit(5, epoch: 2, fenced: 1, pid: 20, at: 310)
        let late = commit(5, epoch: 1, fenced: 1, pid: 10, at: 250)
        for bad in [stranger, stale, late] {
            let found = LeaseAudit.checkCommits(clean + [bad], history: history, strict: false).violations
            #expect(found.count >= 1, "\(bad)")
        }
        let afterRelease = commit(3, epoch: 1, fenced: 1, pid: 10, at: 205)
        #expect(
            LeaseAudit.checkCommits(Array(clean.prefix(2)) + [afterRelease], history: history, strict: false)
                .violations.map(\.problem).contains { $0.contains("after the lease ended") })
    }
}

extension WriterLease.Held {
    /// A store the holdings below name (never written through).
    static let testingStore: SharedStore = {
        let path = FileManager.default.temporaryDirectory.path + "/baton-testing-\(getpid())"
        // swift-format-ignore: NeverUseForceTry
        return try! SharedStore.open(directory: SharedDirectory(path: path), logger: Logger(label: "test"))
    }()

    /// A holding of `epoch` for the pure state-machine tests (never written through).
    static func testing(_ epoch: Int64, takenOver: Int64? = nil) -> WriterLease.Held {
        WriterLease.Held(
            fence: LeaseFence(
                store: testingStore, epoch: epoch, holder: "test", pid: 1, granted: 0, previous: epoch - 1,
                closing: nil,
                stillHeld: { true }),
            takeover: takenOver.map {
                WriterLease.Takeover(
                    epoch: $0, name: "frozen", pid: 2, holderState: .stopped, silentMillis: 2000)
            })
    }
}

@Suite("Hand-over state machine: the held lease (no I/O)")
struct HeldLeaseMachineTests {
    @Test("the machine holds the lease exactly from its acquisition to its release")
    func heldFollowsPhases() {
        var machine = HandOverStateMachine()
        #expect(machine.held == nil)
        _ = machine.lifecycle(.foreground)
        #expect(machine.held == nil)
        let first = WriterLease.Held.testing(1)
        _ = machine.leaseAcquired(first)
        #expect(machine.held == first)
        _ = machine.lifecycle(.background)
        #expect(machine.phase == .releasing)
        #expect(machine.held == first, "still held while its syncs stop")
        _ = machine.released()
        #expect(machine.held == nil)
    }

    @Test("a lease that arrives unwanted, or a second one, is never the machine's")
    func unwantedLease() {
        var machine = HandOverStateMachine()
        #expect(machine.leaseAcquired(.testing(1)) == [.releaseUnused])
        #expect(machine.held == nil)
        _ = machine.lifecycle(.foreground)
        let first = WriterLease.Held.testing(2)
        _ = machine.leaseAcquired(first)
        #expect(machine.leaseAcquired(.testing(3)) == [.releaseUnused])
        #expect(machine.held == first)
    }

    @Test("a takeover is held like any lease; taken over in turn, it stays held (fenced) until released")
    func takeoverThenFenced() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        let taken = WriterLease.Held.testing(5, takenOver: 4)
        #expect(machine.leaseAcquired(taken) == [.becomeWriter, .publish])
        #expect(machine.held?.takeover?.epoch == 4)
        #expect(machine.leaseLost(takenOver: true) == [.publish, .stopAndRelease(.fenced)])
        #expect(machine.phase == .fenced)
        #expect(machine.held == taken)
        #expect(machine.released() == [.publish, .startAcquiring])
        #expect(machine.held == nil)
        #expect(machine.leaseAcquired(.testing(7)) == [.becomeWriter, .publish])
        #expect(machine.held?.epoch == 7)
    }

    @Test("shutdown while fenced: exits once released, holding nothing")
    func shutdownWhileFenced() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired(.testing(1))
        _ = machine.leaseLost(takenOver: true)
        #expect(machine.shutdown() == [])
        #expect(machine.released() == [.publish, .exit])
        #expect(machine.phase == .finished)
        #expect(machine.held == nil)
    }
}
