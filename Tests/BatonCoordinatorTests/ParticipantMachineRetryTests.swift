import BatonSync
import Testing

@testable import BatonCoordinator

@Suite("Participant machine: retries of failed syncs (no I/O)")
struct ParticipantMachineRetryTests {
    @Test(
        "the pause doubles from the base up to the maximum; the shift stops at 16 so it never overflows",
        arguments: [
            (1, Duration.milliseconds(500)), (2, .seconds(1)), (3, .seconds(2)), (6, .seconds(16)),
            (7, .seconds(30)), (17, .seconds(30)), (1_000, .seconds(30)), (0, .milliseconds(500)),
        ])
    func backoff(attempt: Int, delay: Duration) {
        #expect(TestMachine.backoff(.milliseconds(500), attempt: attempt, max: .seconds(30)) == delay)
    }

    @Test("past 17 failures the doubling stops growing even without a maximum in reach")
    func backoffShiftCap() {
        let huge = Duration.seconds(1_000_000)
        #expect(TestMachine.backoff(.milliseconds(1), attempt: 17, max: huge) == .milliseconds(65_536))
        #expect(TestMachine.backoff(.milliseconds(1), attempt: 1_000_000, max: huge) == .milliseconds(65_536))
    }

    @Test("a failed sync runs again after 20, 40, 80, then the 100 ms cap, and never gives up")
    func retriesDoubleUpToTheCap() throws {
        var machine = TestMachine.writer(retryDelay: .milliseconds(20), maxRetryDelay: .milliseconds(100))
        let delays: [Int64] = [20, 40, 80, 100, 100] + Array(repeating: 100, count: 40)
        for (index, delay) in delays.enumerated() {
            let attempt = index + 1
            let at = Int64(attempt) * 1_000
            let actions = machine.handle(syncFailed("accounts", "HTTP 503 #\(attempt)", at: at))
            let timer = try #require(actions.scheduled.first).id
            #expect(timer.kind == .retry("accounts"))
            #expect(
                actions
                    == [
                        .record(.syncRetry(name: "accounts", attempt: attempt, delay: .milliseconds(delay))),
                        .scheduleTimer(timer, after: .milliseconds(delay)), .publish,
                    ])
            let shown = SyncRetry(
                name: "accounts", attempt: attempt, lastError: "HTTP 503 #\(attempt)", nextAttempt: at + delay
            )
            #expect(machine.retrying == [shown])
            #expect(machine.handle(.timerFired(timer)) == [.runSync("accounts")])
            #expect(machine.retrying == [shown], "shown while it runs again")
        }
        #expect(machine.handle(.syncFinished("accounts")) == [.publish])
        #expect(machine.retrying.isEmpty)
        #expect(machine.failures(of: "accounts") == 0)
        // Failing again starts from the base delay.
        #expect(machine.handle(syncFailed("accounts")).scheduled[0].delay == .milliseconds(20))
    }

    @Test("retried only as writer, with a retry delay, one at a time, for configured syncs")
    func retryGuards() {
        var machine = TestMachine.writer()
        let first = machine.handle(syncFailed("accounts"))
        #expect(first.scheduled.count == 1)
        #expect(machine.handle(syncFailed("accounts")) == [], "one waits already")
        #expect(machine.failures(of: "accounts") == 1)
        #expect(machine.handle(syncFailed("unconfigured")) == [])
        #expect(machine.handle(.syncFinished("unconfigured")) == [])

        var never = TestMachine.writer(retryDelay: nil)
        #expect(never.handle(syncFailed("accounts")) == [])
        #expect(never.retrying.isEmpty)

        var waiting = TestMachine.make()
        _ = waiting.feed(.lifecycle(.foreground))
        #expect(waiting.handle(syncFailed("accounts")) == [])
    }

    @Test("a rerun that cannot even start is retried like a failure; the last known error is kept")
    func rerunStartFails() {
        var machine = TestMachine.writer()
        let timer = machine.handle(syncFailed("accounts", "boom")).scheduled[0].id
        _ = machine.feed(.timerFired(timer))
        let again = machine.handle(syncFailed("accounts", nil, at: 500))
        #expect(again.scheduled[0].delay == .milliseconds(40))
        #expect(
            machine.retrying == [SyncRetry(name: "accounts", attempt: 2, lastError: "boom", nextAttempt: 540)]
        )

        var fresh = TestMachine.writer()
        _ = fresh.feed(syncFailed("contacts", nil))
        #expect(fresh.retrying.map(\.lastError) == ["unknown"])
    }

    @Test("a sync done while its retry waits: the retry is cancelled and no longer shown")
    func doneCancelsRetry() {
        var machine = TestMachine.writer()
        let timer = machine.handle(syncFailed("accounts")).scheduled[0].id
        #expect(machine.handle(.syncFinished("accounts")) == [.cancelTimer(timer), .publish])
        #expect(machine.handle(.timerFired(timer)) == [])
        #expect(machine.handle(.syncFinished("accounts")) == [])
    }

    @Test("a release cancels every retry and its status; failures in a row carry over to the next holding")
    func releaseCancelsRetries() {
        var machine = TestMachine.writer()
        let accounts = machine.handle(syncFailed("accounts")).scheduled[0].id
        let contacts = machine.handle(syncFailed("contacts")).scheduled[0].id
        #expect(
            machine.handle(.lifecycle(.background))
                == [
                    .record(.lifecycle(.background)), .cancelTimer(accounts), .cancelTimer(contacts),
                    .publish,
                    .stopManager(.background),
                ])
        #expect(machine.retrying.isEmpty)
        #expect(machine.pendingTimers.isEmpty)
        let releasing = machine
        #expect(machine.handle(.timerFired(accounts)) == [], "a cancelled timer that fires anyway")
        #expect(machine == releasing)
        #expect(machine.handle(syncFailed("accounts")) == [], "no retry while releasing")

        _ = machine.stopped(began: 0)
        _ = machine.feed(
            .released, .lifecycle(.foreground), .leaseGranted(TestLease(epoch: 2), waitMillis: 0),
            .writerStarted)
        let next = machine.handle(syncFailed("accounts"))
        #expect(next.contains(.record(.syncRetry(name: "accounts", attempt: 2, delay: .milliseconds(40)))))
    }

    @Test("a sync that failed because the store file is gone is not retried: the writer hands the lease over")
    func storeLostSync() throws {
        let reason = "the store file was deleted; this process no longer writes to it"
        var machine = TestMachine.writer()
        #expect(
            machine.handle(syncFailed("accounts", store: reason))
                == [
                    .record(.storeLost(reason)), .record(.problem(reason)), .publish,
                    .stopManager(.storeLost),
                ])
        #expect(machine.problem == .storeLost(reason))
        #expect(machine.pendingTimers.isEmpty, "no check while the lease is held")
        #expect(machine.failures(of: "accounts") == 0)
        // Said once; not a writer any more, so nothing else.
        #expect(machine.handle(.storeLost(reason)) == [])
        _ = machine.stopped(began: 0)
        // Waiting, but not for the lease (a holder could only fail to start and hand it back):
        // the store is checked after a pause instead.
        let released = machine.handle(.released)
        let check = try #require(released.scheduled.first)
        #expect(released == [.publish, .scheduleTimer(check.id, after: .milliseconds(20))])
        #expect(check.id.kind == .recovery(.store))
        #expect(machine.phase == .waiting)
        // The file back in place: the problem is over, the check goes, the lease is asked for.
        #expect(
            machine.handle(.storeBack) == [
                .cancelTimer(check.id), .record(.storeBack), .record(.problem(nil)), .publish,
                .startAcquiring,
            ])
        #expect(machine.problem == nil)
        #expect(machine.handle(.storeBack) == [])
        #expect(machine.failures(of: .store) == 0)
    }

    @Test("while the store file is lost nothing asks for the lease: not foreground, not a recovery timer")
    func storeLostHoldsOffTheLease() throws {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground))
        // Lost while waiting: the wait ends (and a lease recovery with it).
        let failed = machine.handle(.leaseFailed("disk I/O error"))
        let recovery = try #require(failed.scheduled.first?.id)
        let lost = machine.handle(.storeLost("deleted"))
        #expect(lost.contains(.cancelAcquiring))
        #expect(lost.contains(.cancelTimer(recovery)))
        #expect(machine.handle(.timerFired(recovery)) == [])
        // Background and foreground again: still no wait for the lease.
        _ = machine.feed(.lifecycle(.background))
        #expect(!machine.handle(.lifecycle(.foreground)).contains(.startAcquiring))
        #expect(machine.phase == .waiting)
        #expect(machine.handle(.storeBack).contains(.startAcquiring))
        // Back while in the background: the problem clears, the lease is not asked for.
        var idle = TestMachine.make()
        let idleLost = idle.feed(.storeLost("renamed"))
        let check = try #require(idleLost.scheduled.first?.id)
        #expect(
            idle.handle(.storeBack) == [
                .cancelTimer(check), .record(.storeBack), .record(.problem(nil)), .publish,
            ])
        #expect(idle.handle(.lifecycle(.foreground)).contains(.startAcquiring))
    }

    @Test("the store file gone while not writing: said, published and checked again, nothing handed over")
    func storeLostIdle() throws {
        var machine = TestMachine.make()
        let lost = machine.handle(.storeLost("renamed"))
        let check = try #require(lost.scheduled.first?.id)
        #expect(
            lost == [
                .record(.storeLost("renamed")), .record(.problem("renamed")), .publish,
                .scheduleTimer(check, after: .milliseconds(20)),
            ])
        #expect(machine.handle(.storeLost("renamed")) == [], "a check is on its way")
        #expect(machine.handle(.storeLost("replaced")) == [], "the detection does not flip the problem shown")
        #expect(machine.phase == .background)
    }

    @Test(
        "a lost store is checked after pauses that double, each failed check saying why, until it is reopened"
    )
    func storeCheckBackoff() throws {
        var machine = TestMachine.make(maxRetryDelay: .milliseconds(200))
        _ = machine.feed(.lifecycle(.foreground))
        var timer = try #require(machine.handle(.storeLost("the store file was deleted")).scheduled.first?.id)
        var delays: [Duration] = []
        for attempt in 1...6 {
            #expect(machine.handle(.timerFired(timer)) == [.checkStore])
            let reason = "no store is at D/store.sqlite (\(attempt))"
            let failed = machine.handle(.storeReopenFailed(reason))
            #expect(machine.problem == .storeLost(reason), "the status says why the latest check failed")
            #expect(failed.contains(.publish))
            #expect(!failed.contains(.startAcquiring))
            let next = try #require(failed.scheduled.first)
            delays.append(next.delay)
            timer = next.id
        }
        // 20 ms doubling, up to the 200 ms maximum: the same pauses as a failed sync's.
        #expect(delays.map(\.inMilliseconds) == [40, 80, 160, 200, 200, 200])
        #expect(machine.handle(.timerFired(timer)) == [.checkStore])
        let reopened = machine.handle(.storeReopened("the store file D/store.sqlite was replaced"))
        #expect(
            reopened == [
                .record(.storeReopened("the store file D/store.sqlite was replaced")), .record(.problem(nil)),
                .publish,
                .startAcquiring,
            ])
        #expect(machine.pendingTimers.isEmpty)
        #expect(machine.failures(of: .store) == 0, "the next loss starts from the base pause")
    }

    @Test("a store lost by the writer is checked only once the lease is let go")
    func storeCheckWaitsForTheRelease() throws {
        var machine = TestMachine.writer()
        let lost = machine.handle(.storeLost("the write-ahead log was deleted"))
        #expect(lost.scheduled.isEmpty)
        #expect(lost.contains(.stopManager(.storeLost)))
        _ = machine.stopped(began: 0)
        let released = machine.feed(.released)
        let check = try #require(released.scheduled.first?.id)
        #expect(check.kind == .recovery(.store))
        // A late timer of another kind, a shutdown: no check after it.
        _ = machine.feed(.shutdown)
        #expect(machine.handle(.timerFired(check)) == [])
    }
}

@Suite("Participant machine: problems and recoveries (no I/O)")
struct ParticipantMachineRecoveryTests {
    let one = TestLease(epoch: 1)

    @Test("a lease that cannot be recorded: said, tried again after a doubling pause; the lease clears it")
    func leaseRecovery() throws {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground))
        let text = "could not record the writer lease (disk I/O error); trying again"
        let failed = machine.handle(.leaseFailed("disk I/O error"))
        let timer = try #require(failed.scheduled.first)
        #expect(timer.id.kind == .recovery(.lease))
        #expect(
            failed
                == [
                    .record(.leaseFailed("disk I/O error")), .record(.problem(text)), .publish,
                    .scheduleTimer(timer.id, after: .milliseconds(20)),
                ])
        #expect(machine.problem?.description == text)
        #expect(machine.handle(.timerFired(timer.id)) == [.startAcquiring])
        let again = machine.handle(.leaseFailed("disk I/O error"))
        #expect(again.first == .record(.leaseFailed("disk I/O error")))
        #expect(again.scheduled.map(\.delay) == [.milliseconds(40)])
        #expect(machine.failures(of: .lease) == 2)
        // The next wait gets the lease: the problem goes, and the pauses start over.
        #expect(machine.handle(.timerFired(again.scheduled[0].id)) == [.startAcquiring])
        #expect(
            machine.handle(.leaseGranted(one, waitMillis: 9))
                == [
                    .record(.problem(nil)), .publish, .record(.leaseAcquired(one, waitMillis: 9)),
                    .becomeWriter(one),
                    .publish,
                ])
        #expect(machine.problem == nil)
        #expect(machine.failures(of: .lease) == 0)
    }

    @Test("a lease recovery does nothing once the participant no longer waits; background cancels it")
    func leaseRecoveryAfterBackground() {
        var machine = TestMachine.make()
        let timer = machine.feed(.lifecycle(.foreground), .leaseFailed("x")).scheduled[0].id
        #expect(
            machine.handle(.lifecycle(.background))
                == [.record(.lifecycle(.background)), .cancelTimer(timer), .cancelAcquiring, .publish])
        #expect(machine.handle(.timerFired(timer)) == [])
        // A wait cancelled just as it failed: said, nothing tried again, no problem claimed.
        #expect(machine.handle(.leaseFailed("y")) == [.record(.leaseFailed("y"))])
        // Foreground again asks at once; the earlier failures still count for the next pause.
        #expect(machine.handle(.lifecycle(.foreground)).contains(.startAcquiring))
        #expect(machine.handle(.leaseFailed("z")).scheduled.map(\.delay) == [.milliseconds(40)])
    }

    @Test("syncs that cannot start as writer: said, started again with the same lease; a start clears it")
    func writerStartRecovery() {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground), .leaseGranted(one, waitMillis: 0))
        let text = "could not start syncs as writer (SQLITE_FULL); trying again"
        let failed = machine.handle(.writerStartFailed("SQLITE_FULL"))
        let timer = failed.scheduled[0].id
        #expect(
            failed
                == [
                    .record(.problem(text)), .publish, .scheduleTimer(timer, after: .milliseconds(20)),
                ])
        #expect(
            machine.beginLocalEdit() == nil, "no edit before the writer started: its soups may be missing")
        #expect(machine.handle(.timerFired(timer)) == [.becomeWriter(one)])
        let again = machine.handle(.writerStartFailed("SQLITE_FULL"))
        #expect(
            again == [.scheduleTimer(again.scheduled[0].id, after: .milliseconds(40))])
        _ = machine.feed(.timerFired(again.scheduled[0].id))
        #expect(
            machine.handle(.writerStarted) == [
                .record(.problem(nil)), .publish, .resumeEditWaiters, .checkPriority,
            ])
        #expect(machine.beginLocalEdit() == one)
        #expect(machine.failures(of: .writerStart) == 0)
    }

    @Test("a release cancels a writer-start recovery (its count and problem stay until a start succeeds)")
    func writerStartRecoveryCancelledByRelease() {
        var machine = TestMachine.writer()
        let timer = machine.handle(.writerStartFailed("SQLITE_FULL")).scheduled[0].id
        #expect(machine.handle(.lifecycle(.background)).contains(.cancelTimer(timer)))
        #expect(machine.handle(.timerFired(timer)) == [])
        #expect(machine.failures(of: .writerStart) == 1)
        _ = machine.stopped(began: 0)
        _ = machine.feed(.released, .lifecycle(.foreground))
        _ = machine.feed(.leaseGranted(TestLease(epoch: 2), waitMillis: 0))
        #expect(machine.handle(.writerStartFailed("again")).scheduled.map(\.delay) == [.milliseconds(40)])
    }

    @Test("a start result for a holding no longer writer is ignored")
    func staleStartResults() {
        var machine = TestMachine.writer()
        _ = machine.feed(.lifecycle(.background))
        let releasing = machine
        #expect(machine.feed(.writerStarted, .writerStartFailed("x"), .writerStartStale) == [])
        #expect(machine == releasing)
    }

    @Test("a blocked takeover is the problem until it is no longer blocked; unblocked clears only that")
    func takeoverBlocked() {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground))
        let message = blockedHolder.message
        #expect(
            machine.handle(.leaseBlocked(blockedHolder))
                == [.record(.leaseBlocked(blockedHolder)), .record(.problem(message)), .publish])
        #expect(machine.handle(.leaseBlocked(blockedHolder)) == [.record(.leaseBlocked(blockedHolder))])
        #expect(
            machine.handle(.leaseBlocked(nil)) == [
                .record(.leaseBlocked(nil)), .record(.problem(nil)), .publish,
            ])
        #expect(machine.handle(.leaseBlocked(nil)) == [])

        _ = machine.feed(.leaseFailed("disk I/O error"))
        #expect(machine.handle(.leaseBlocked(nil)) == [])
        #expect(machine.problem == .leaseRecordFailed("disk I/O error"))
    }

    @Test("a lease clears only a lease problem; a start clears only a start problem")
    func clearingIsSpecific() {
        var machine = TestMachine.make()
        _ = machine.feed(.lifecycle(.foreground), .leaseBlocked(blockedHolder))
        _ = machine.feed(.leaseGranted(one, waitMillis: 0), .writerStarted)
        #expect(machine.problem == .takeoverBlocked(blockedHolder.message))

        var lost = TestMachine.writer()
        _ = lost.feed(.storeLost("replaced"))
        _ = lost.stopped(began: 0)
        _ = lost.feed(.released)
        _ = lost.feed(.leaseGranted(TestLease(epoch: 2), waitMillis: 0), .writerStarted)
        #expect(lost.problem == .storeLost("replaced"))
    }

    @Test(
        "a status that cannot be published: said once, published again after doubling pauses until it lands")
    func publishRecovery() {
        var machine = TestMachine.make()
        let failed = machine.handle(.publishFailed("ENOSPC"))
        let first = failed.scheduled[0].id
        #expect(
            failed == [.record(.statusFailed("ENOSPC")), .scheduleTimer(first, after: .milliseconds(20))])
        #expect(machine.handle(.publishFailed("ENOSPC")) == [], "a retry is on its way")
        #expect(machine.handle(.timerFired(first)) == [.publish])
        let second = machine.handle(.publishFailed("ENOSPC"))
        #expect(second == [.scheduleTimer(second.scheduled[0].id, after: .milliseconds(40))])
        #expect(machine.handle(.published) == [.cancelTimer(second.scheduled[0].id)])
        #expect(machine.failures(of: .publish) == 0)
        #expect(machine.handle(.publishFailed("EIO")).first == .record(.statusFailed("EIO")))
    }

    @Test("recoveries without a retry delay start from 500 ms")
    func recoveryBase() {
        var machine = TestMachine.make(retryDelay: nil)
        #expect(machine.handle(.publishFailed("ENOSPC")).scheduled.map(\.delay) == [.milliseconds(500)])
    }
}
