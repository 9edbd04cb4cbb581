import BatonCoordinator
import BatonStore
import Testing

@Suite("Hand-over state machine (no I/O)")
struct HandOverStateMachineTests {
    @Test("foreground asks for the lease; getting it makes a writer")
    func foregroundToWriter() {
        var machine = HandOverStateMachine()
        #expect(machine.lifecycle(.foreground) == [.publish, .startAcquiring])
        #expect(machine.phase == .waitingForLease)
        #expect(machine.lifecycle(.foreground) == [])
        #expect(machine.leaseAcquired() == [.becomeWriter, .publish])
        #expect(machine.phase == .writer)
    }

    @Test("background stops and releases; released returns to background")
    func backgroundReleases() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired()
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
        _ = machine.leaseAcquired()
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
        #expect(machine.leaseAcquired() == [.releaseUnused])
        #expect(machine.phase == .background)
    }

    @Test("a writer yields to a higher priority and then waits to retake the lease")
    func priorityYield() {
        var machine = HandOverStateMachine()
        _ = machine.lifecycle(.foreground)
        _ = machine.leaseAcquired()
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
            _ = machine.leaseAcquired()
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
}
