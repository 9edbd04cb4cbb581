import BatonCoordinator
import BatonLocking
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Writer lease")
struct WriterLeaseTests {
    /// A shared directory and its store, and leases on them by name.
    struct Fixture {
        let temp: TemporaryDirectory
        let shared: SharedDirectory
        let store: SharedStore

        init() throws {
            temp = try TemporaryDirectory()
            shared = try SharedDirectory(path: temp.path + "/d")
            var quiet = Logger(label: "test")
            quiet.logLevel = .critical
            store = try SharedStore.open(directory: shared, logger: quiet)
        }

        func lease(_ name: String) throws -> WriterLease {
            try WriterLease(directory: shared, store: store, name: name)
        }

        /// Waits (checking the board) until `lease` sees `count` waiters.
        static func waitForWaiters(_ lease: WriterLease, _ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while lease.waiting().count < count {
                try #require(ContinuousClock.now < deadline, "the waiters never announced themselves")
                try await Task.sleep(for: .milliseconds(1))  // wait-ok: the board has no doorbell
            }
        }

        /// A newcomer gets the lease (so nobody kept it), with a later epoch than `epoch`.
        func expectFree(after epoch: Int64) async throws {
            let newcomer = try lease("newcomer")
            let got = try await newcomer.acquire(deadline: .now + .seconds(20))
            #expect(got.epoch > epoch)
            try await store.write(got.fence) { try $0.registerSoup("newcomer", indexSpecs: []) }
            newcomer.release(got)
        }
    }

    @Test(
        "a waiter is granted the lease when the holder releases it, with the next epoch",
        .timeLimit(.minutes(1)))
    func handOver() async throws {
        let f = try Fixture()
        let first = try f.lease("a")
        let second = try f.lease("b")
        let held = try await first.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        #expect(try second.tryAcquire() == nil)
        let waiting = Task { try await second.acquire() }
        first.release(held)
        let next = try await waiting.value
        #expect(next.epoch == held.epoch + 1)
        try await f.store.write(next.fence) { try $0.registerSoup("b", indexSpecs: []) }
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["a", "b"])
        #expect(history.first?.releaseKind == "released")
        second.release(next)
    }

    @Test("past its deadline a wait fails with leaseTimeout", .timeLimit(.minutes(1)))
    func deadline() async throws {
        let f = try Fixture()
        let first = try f.lease("a")
        let held = try await first.acquire()
        await #expect {
            try await f.lease("b").acquire(deadline: .now + .milliseconds(200))
        } throws: { ($0 as? CoordinatorError)?.code == .leaseTimeout }
        first.release(held)
        // The abandoned wait gives the lock back.
        try await f.expectFree(after: held.epoch)
    }

    @Test("a cancelled wait ends at once and never keeps the lock", .timeLimit(.minutes(1)))
    func cancelled() async throws {
        let f = try Fixture()
        let first = try f.lease("a")
        let held = try await first.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        let second = try f.lease("b")
        let waiting = Task { try await second.acquire() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        first.release(held)
        try await f.expectFree(after: held.epoch)
        #expect(second.current == nil)
        let names = try await f.store.read { try $0.leaseHistory() }.map(\.name)
        #expect(names == ["a", "newcomer"])
    }

    @Test(
        "while mayTry says no, the waiter holds back; a published state change wakes it",
        .timeLimit(.minutes(1)))
    func holdsBack() async throws {
        let f = try Fixture()
        try f.shared.ensureSubdirectory(f.shared.participantsPath)
        let allowed = Locked(false)
        let lease = try f.lease("low")
        let (asks, asked) = AsyncStream.makeStream(of: Void.self)
        let waiting = Task {
            try await lease.acquire(interval: .seconds(30)) {
                asked.yield()
                return allowed.withLock { $0 }
            }
        }
        // It asked, was told no, and holds nothing.
        var iterator = asks.makeAsyncIterator()
        _ = await iterator.next()
        #expect(lease.current == nil)
        allowed.withLock { $0 = true }
        // A participant's publish (with its name lock, as every participant has) wakes the wait.
        try f.shared.ensureSubdirectory(f.shared.participantsPath)
        let nameLock = try FileLock(path: f.shared.participantsPath + "/high.lock")
        #expect(try nameLock.tryLock())
        defer { nameLock.unlock() }
        let status = ParticipantStatus(
            role: .host, name: "high", priority: 100, pid: getpid(), lifecycle: .background,
            phase: .background, epoch: nil, managerState: "stopped", updated: 1)
        try status.publish(in: f.shared)
        let held = try await waiting.value
        #expect(lease.current == held)
        lease.release(held)
    }
}

/// The bounded lease: a holder renews its turn while nobody has waited past the budget.
@Suite("Writer lease renewal")
struct WriterLeaseRenewalTests {
    typealias Fixture = WriterLeaseTests.Fixture

    func waitForWaiters(_ lease: WriterLease, _ count: Int) async throws {
        try await Fixture.waitForWaiters(lease, count)
    }

    @Test("with nobody waiting a renewal keeps the lock: the next epoch, the turn before closed as renewed")
    func renewsAlone() async throws {
        let f = try Fixture()
        let lease = try f.lease("a")
        let first = try await lease.acquire()
        // A holding that has not written goes on as it is.
        #expect(lease.renew(first, budget: .zero) == first)
        try await f.store.write(first.fence) { try $0.registerSoup("a", indexSpecs: []) }
        let second = try #require(lease.renew(first, budget: .zero))
        #expect(second.epoch == first.epoch + 1 && lease.current == second)
        try await f.store.write(second.fence) { try $0.registerSoup("b", indexSpecs: []) }
        // The old holding is stale now, as after any turn.
        await #expect {
            try await f.store.write(first.fence) { try $0.registerSoup("c", indexSpecs: []) }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [first.epoch, second.epoch])
        #expect(history.map(\.releaseKind) == ["renewed", nil])
        #expect(history[0].released == history[1].acquired)
        #expect(LeaseAudit.check(history).isEmpty)
        lease.release(second)
        try await f.expectFree(after: second.epoch)
    }

    @Test("a waiter inside the budget is passed; past it the holder releases and the waiter gets the lease")
    func yieldsPastBudget() async throws {
        let f = try Fixture()
        let holder = try f.lease("a")
        var held = try await holder.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        let waiter = try f.lease("b")
        let waiting = Task { try await waiter.acquire() }
        try await waitForWaiters(holder, 1)
        #expect(holder.waiting().first?.pid == getpid())
        // Within a budget of an hour: renewed, and the waiter still waits.
        held = try #require(holder.renew(held, budget: .seconds(3600)))
        try await f.store.write(held.fence) { try $0.registerSoup("a2", indexSpecs: []) }
        // Past a budget of zero: released.
        #expect(holder.renew(held, budget: .zero) == nil)
        #expect(holder.current == nil)
        let next = try await waiting.value
        #expect(next.epoch == held.epoch + 1)
        try await f.store.write(next.fence) { try $0.registerSoup("b", indexSpecs: []) }
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.releaseKind) == ["renewed", "released", nil])
        #expect(holder.waiting().isEmpty)
        waiter.release(next)
    }

    @Test("a waiter of higher priority gets the lease at once, whatever the budget")
    func yieldsToPriority() async throws {
        let f = try Fixture()
        let holder = try f.lease("a")
        let held = try await holder.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        /// Takes the lease, writes under it and lets it go: the epoch it wrote under.
        func turn(_ name: String, priority: Int) -> Task<Int64, any Error> {
            Task {
                let lease = try f.lease(name)
                let got = try await lease.acquire(priority: priority)
                try await f.store.write(got.fence) { try $0.registerSoup(name, indexSpecs: []) }
                lease.release(got)
                return got.epoch
            }
        }
        let low = turn("low", priority: 0)
        try await waitForWaiters(holder, 1)
        let kept = try #require(holder.renew(held, budget: .seconds(3600), priority: 5))
        let high = turn("high", priority: 10)
        try await waitForWaiters(holder, 2)
        #expect(holder.renew(kept, budget: .seconds(3600), priority: 5) == nil)
        // Whoever the kernel grants it to first, both turns follow the holder's.
        let epochs = [try await high.value, try await low.value]
        #expect(epochs.allSatisfy { $0 > kept.epoch } && Set(epochs).count == 2)
    }

    @Test("a waiter that died leaves its bytes on the board but no lock: it is not waited for")
    func deadWaiterIgnored() async throws {
        let f = try Fixture()
        let holder = try f.lease("a")
        let held = try await holder.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        // A slot filled as a waiter fills it, by a process that is gone (nothing locks it).
        var slot = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: Int32(999_999).littleEndian) { for (i, b) in $0.enumerated() { slot[i] = b } }
        withUnsafeBytes(of: UInt64(1).littleEndian) { for (i, b) in $0.enumerated() { slot[8 + i] = b } }
        try Data(slot).write(to: URL(fileURLWithPath: f.shared.writerWaitersPath))
        #expect(holder.waiting().isEmpty)
        let renewed = try #require(holder.renew(held, budget: .zero))
        holder.release(renewed)
    }

    @Test("a renewal of a holding that is not current does nothing")
    func notCurrent() async throws {
        let f = try Fixture()
        let lease = try f.lease("a")
        let held = try await lease.acquire()
        lease.release(held)
        #expect(lease.renew(held, budget: .seconds(1)) == nil)
        try await f.expectFree(after: held.epoch)
    }
}

extension WriterLeaseRenewalTests {
    @Test("a renewed turn that never wrote leaves no interval: the turn before ends at the release")
    func renewedUnwritten() async throws {
        let f = try Fixture()
        let lease = try f.lease("a")
        let first = try await lease.acquire()
        try await f.store.write(first.fence) { try $0.registerSoup("a", indexSpecs: []) }
        let renewed = try #require(lease.renew(first, budget: .zero))
        lease.release(renewed)
        let next = try f.lease("b")
        let got = try await next.acquire()
        try await f.store.write(got.fence) { try $0.registerSoup("b", indexSpecs: []) }
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["a", "b"])
        #expect(history.first?.releaseKind == "released")
        #expect(LeaseAudit.check(history).isEmpty)
        next.release(got)
    }
}
