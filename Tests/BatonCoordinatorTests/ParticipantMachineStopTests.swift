import BatonSync
import Testing

@testable import BatonCoordinator

@Suite("Participant machine: the stop before a release, observations, local edits (no I/O)")
struct ParticipantMachineStopTests {
    let one = TestLease(epoch: 1)

    /// A writer with this save grace (deadline 5 s), asked to go to the background.
    static func releasing(saveGrace: Duration?, reason: ReleaseReason = .background) -> TestMachine {
        var machine = TestMachine(
            configuredSyncs: ["accounts"], retryDelay: .milliseconds(20), maxRetryDelay: .seconds(1),
            stopDeadline: .seconds(5), saveGrace: saveGrace)
        _ = machine.feed(
            .lifecycle(.foreground), .leaseGranted(TestLease(epoch: 1), waitMillis: 0), .writerStarted)
        if reason == .storeLost {
            #expect(machine.handle(.storeLost("deleted")).contains(.stopManager(.storeLost)))
        } else {
            #expect(machine.handle(.lifecycle(.background)).last == .stopManager(.background))
        }
        return machine
    }

    @Test(
        "no save grace: the deadline is timed, the manager awaited; within it, a flush, the stop, a checkpoint after the release"
    )
    func withinDeadline() throws {
        var machine = Self.releasing(saveGrace: nil)
        let stopping = machine.handle(.managerStopping(.stopRequested, began: 10))
        let deadline = try #require(stopping.scheduled.first)
        #expect(deadline.id.kind == .stopDeadline && deadline.delay == .seconds(5))
        #expect(
            stopping == [
                .record(.manager(.stopRequested)), .publish, .scheduleTimer(deadline.id, after: .seconds(5)),
                .awaitManagerStop,
            ])
        #expect(machine.waitsForManagerStop)
        #expect(machine.pendingTimers == [deadline.id])
        #expect(machine.handle(.syncStateChanged) == [], "the manager is not waited for while it stops")
        #expect(
            machine.handle(.managerStopped) == [
                .cancelTimer(deadline.id), .flushUnpersisted, .record(.syncsStopped(began: 10)),
                .checkpointAfterRelease, .dropWriteAccess,
            ])
        #expect(!machine.waitsForManagerStop)
        #expect(machine.pendingTimers.isEmpty)
        #expect(
            machine.handle(.timerFired(deadline.id)) == [], "a deadline after the stop interrupts nothing")
        #expect(machine.handle(.managerState(.stopped)) == [.record(.manager(.stopped)), .publish])
        #expect(
            machine.handle(.syncsStopped)
                == [.releaseLease(one, reason: .background, recordRelease: true, stopBegan: 10)])
        #expect(machine.handle(.released) == [.publish])
        #expect(machine.phase == .background)
    }

    @Test("save grace 0: the page being saved ends at once")
    func graceZero() {
        var machine = Self.releasing(saveGrace: .zero)
        let stopping = machine.handle(.managerStopping(.stopRequested, began: 0))
        #expect(stopping.scheduled.map(\.id.kind) == [.stopDeadline])
        #expect(
            Array(stopping.prefix(3)) == [.record(.manager(.stopRequested)), .publish, .endPageSaveEarly])
        #expect(stopping.last == .awaitManagerStop)
    }

    @Test("save grace > 0: timed, at most the deadline; when it passes, the page save ends, once")
    func graceTimed() throws {
        var machine = Self.releasing(saveGrace: .seconds(1))
        let stopping = machine.handle(.managerStopping(.stopRequested, began: 0))
        #expect(stopping.scheduled.map(\.delay) == [.seconds(1), .seconds(5)])
        #expect(!stopping.contains(.endPageSaveEarly))
        let grace = stopping.scheduled[0].id
        #expect(grace.kind == .saveGrace)
        #expect(machine.handle(.timerFired(grace)) == [.endPageSaveEarly])
        #expect(machine.handle(.timerFired(grace)) == [])
        let stopped = machine.handle(.managerStopped)
        #expect(stopped.first == .cancelTimer(stopping.scheduled[1].id))
        #expect(stopped.contains(.flushUnpersisted))

        var long = Self.releasing(saveGrace: .seconds(60))
        let clamped = long.handle(.managerStopping(.stopRequested, began: 0)).scheduled.map(\.delay)
        #expect(clamped == [.seconds(5), .seconds(5)], "a grace longer than the deadline is the deadline")
    }

    @Test("the deadline reached: the store is interrupted; no flush once the manager stops")
    func deadlineReached() throws {
        var machine = Self.releasing(saveGrace: nil)
        let deadline = try #require(
            machine.handle(.managerStopping(.stopRequested, began: 7)).scheduled.first?.id)
        #expect(machine.handle(.timerFired(deadline)) == [.interruptStore])
        #expect(machine.pendingTimers.isEmpty)
        #expect(machine.release?.stop == .waiting(.init(began: 7, deadlinePassed: true)))
        #expect(
            machine.handle(.managerStopped) == [
                .record(.syncsStopped(began: 7)), .checkpointAfterRelease, .dropWriteAccess,
            ])

        // The grace not yet over at the deadline: the page save ends first.
        var graced = Self.releasing(saveGrace: .seconds(5))
        let timers = graced.handle(.managerStopping(.stopRequested, began: 0)).scheduled.map(\.id)
        #expect(
            graced.handle(.timerFired(timers[1])) == [
                .cancelTimer(timers[0]), .endPageSaveEarly, .interruptStore,
            ])
        #expect(graced.handle(.timerFired(timers[0])) == [])
        #expect(!graced.handle(.managerStopped).contains(.flushUnpersisted))
    }

    @Test("a store lost: its log is copied back whole before the release, not after")
    func storeLostCopiesBack() {
        var machine = Self.releasing(saveGrace: nil, reason: .storeLost)
        _ = machine.handle(.managerStopping(.stopRequested, began: 0))
        let stopped = machine.handle(.managerStopped)
        #expect(stopped.contains(.copyBackCompletely))
        #expect(!stopped.contains(.checkpointAfterRelease))
        #expect(stopped.last == .dropWriteAccess)
    }

    @Test("the stop's steps out of turn change nothing")
    func outOfTurn() {
        var writer = TestMachine.writer()
        for event in [
            TestMachine.Event.managerStopping(.stopRequested, began: 0), .managerStopped, .syncsStopped,
        ] {
            let before = writer
            #expect(writer.handle(event) == [])
            #expect(writer == before)
        }
        var machine = Self.releasing(saveGrace: nil)
        #expect(machine.handle(.managerStopped) == [], "before the manager was asked")
        #expect(machine.handle(.syncsStopped) == [])
        _ = machine.handle(.managerStopping(.stopRequested, began: 0))
        #expect(machine.handle(.managerStopping(.stopRequested, began: 1)) == [], "asked once")
        #expect(machine.handle(.syncsStopped) == [], "not before the manager stopped")
    }

    @Test("store files: a problem means lost, none after one means back, none otherwise nothing")
    func storeChecked() {
        var machine = TestMachine.writer()
        #expect(machine.handle(.storeChecked(nil)) == [])
        #expect(machine.handle(.storeChecked("deleted")).contains(.stopManager(.storeLost)))
        #expect(machine.isStoreLost)
        #expect(machine.handle(.storeChecked(nil)).contains(.record(.storeBack)))
        #expect(!machine.isStoreLost)

        var idle = TestMachine.make()
        #expect(idle.handle(.directoryRead(storeProblem: "renamed")).contains(.record(.storeLost("renamed"))))
        #expect(idle.handle(.directoryRead(storeProblem: nil)).contains(.record(.storeBack)))
        #expect(idle.handle(.directoryRead(storeProblem: nil)) == [.refreshWriterHint])
    }

    @Test("the directory read: the writer looks for a higher priority waiting; others refresh the hint")
    func directoryRead() {
        var writer = TestMachine.writer()
        #expect(writer.handle(.directoryRead(storeProblem: nil)) == [.checkPriority])
        #expect(writer.handle(.higherPriorityWaiting).last == .stopManager(.yield))
        #expect(
            writer.handle(.directoryRead(storeProblem: nil)) == [],
            "handing over: its hint comes with the stop")
        var waiting = TestMachine.make()
        _ = waiting.feed(.lifecycle(.foreground))
        #expect(waiting.handle(.directoryRead(storeProblem: nil)) == [.refreshWriterHint])
    }

    @Test("a writer that starts looks for a higher priority waiting, and yields to one")
    func higherPriorityAtStart() {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground), .leaseGranted(one, waitMillis: 0))
        #expect(machine.handle(.writerStarted) == [.resumeEditWaiters, .checkPriority])
        #expect(machine.handle(.higherPriorityWaiting) == [.publish, .stopManager(.yield)])
        #expect(machine.phase == .releasing(.init(lease: one, reason: .yield)))
        // A start that failed looks for nobody (it tries again first).
        var failed = TestMachine.make()
        _ = failed.feed(.lifecycle(.foreground), .leaseGranted(one, waitMillis: 0))
        #expect(!failed.handle(.writerStartFailed("SQLITE_FULL")).contains(.checkPriority))
    }

    @Test("the lock file is checked by a holder only, not once fenced")
    func lockFile() {
        var machine = TestMachine.make()
        #expect(machine.handle(.lockFileChanged) == [])
        machine = TestMachine.writer()
        #expect(machine.handle(.lockFileChanged) == [.checkLockFile(one)])
        _ = machine.handle(.lifecycle(.background))
        #expect(machine.handle(.lockFileChanged) == [.checkLockFile(one)])
        _ = machine.handle(.leaseLost(takenOver: true, successor: nil))
        #expect(machine.phase.name == .fenced)
        #expect(machine.handle(.lockFileChanged) == [])
    }

    @Test(
        "a local edit: admitted as a started writer; waits for a starting one up to the deadline, else for its timeout"
    )
    func editAdmission() {
        var machine = TestMachine.make()
        #expect(machine.admitEdit(waitingUpTo: nil) == .refused)
        #expect(machine.admitEdit(waitingUpTo: .seconds(2)) == .wait(.seconds(2)))
        #expect(machine.notWriterState == "background")
        _ = machine.feed(.lifecycle(.foreground))
        #expect(machine.notWriterState == "waiting")
        _ = machine.feed(.leaseGranted(one, waitMillis: 0))
        #expect(machine.admitEdit(waitingUpTo: nil) == .wait(.seconds(5)), "a writer still starting")
        #expect(machine.admitEdit(waitingUpTo: .seconds(1)) == .wait(.seconds(1)))
        #expect(machine.notWriterState == "starting as the writer")
        _ = machine.feed(.writerStarted)
        #expect(machine.admitEdit(waitingUpTo: nil) == .now)
        _ = machine.feed(.lifecycle(.background))
        #expect(machine.admitEdit(waitingUpTo: nil) == .refused)
        #expect(machine.notWriterState == "releasing")
    }

    @Test("a sync's change asks for the manager's state, except while the manager stops")
    func syncStateChanged() {
        var machine = TestMachine.writer()
        #expect(machine.handle(.syncStateChanged) == [.readManagerState])
        _ = machine.feed(.lifecycle(.background))
        #expect(machine.handle(.syncStateChanged) == [.readManagerState], "asked to stop, not yet waited for")
        _ = machine.feed(.managerStopping(.stopRequested, began: 0))
        #expect(machine.handle(.syncStateChanged) == [])
        _ = machine.feed(.managerStopped)
        #expect(machine.handle(.syncStateChanged) == [.readManagerState])
    }
}
