import BatonLocking
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@testable import BatonCoordinator

/// What a turn of the lease does beyond the kernel's lock: where it waits, where its epoch comes
/// from, and what a holding that never writes passes on.
@Suite("Lease turns")
struct LeaseTurnTests {
    typealias Fixture = WriterLeaseTests.Fixture

    /// The kernel's name of the calling thread.
    static func threadName() -> String? {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines)
    }

    @Test("the lease's threads carry their names into the kernel (ps -L, top -H, perf)")
    func threadNames() async throws {
        let f = try Fixture()
        let lease = try f.lease("a")
        let onExecutor = await withTaskExecutorPreference(lease.executor) { Self.threadName() }
        #expect(onExecutor == "baton.executor")
        // The holder's heartbeat starts with its first holding.
        let held = try await lease.acquire()
        defer { lease.release(held) }
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
        }
        #expect(names.contains("baton.heartbeat\n"))
    }

    @Test(
        "on the lease's executor a contended wait resumes on the executor, and the turn runs there",
        .timeLimit(.minutes(1)))
    func waitsOnTheExecutor() async throws {
        let f = try Fixture()
        let store = f.store
        let holder = try f.lease("a")
        let held = try await holder.acquire()
        try await store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        let waiter = try f.lease("b")
        let executor = waiter.executor
        let waiting = Task {
            try await withTaskExecutorPreference(executor) {
                let got = try await waiter.acquire()
                #expect(executor.isCurrent)
                try await store.write(got.fence) { try $0.registerSoup("b", indexSpecs: []) }
                waiter.release(got)
                return got
            }
        }
        try await f.waitForWaiters(1)
        holder.release(held)
        let got = try await waiting.value
        #expect(got.epoch == held.epoch + 1)
        // One thread, or two when the wait outlasted its first look at the holder (the look
        // could not run on the thread blocked in the kernel).
        #expect((1...2).contains(executor.threadsStarted))
        #expect(!executor.isCurrent)
        let history = try await store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["a", "b"])
        #expect(LeaseAudit.check(history).isEmpty)
    }

    @Test(
        "a wait on the executor that times out leaves its blocked thread, which gives a late grant back",
        .timeLimit(.minutes(1)))
    func timedOutOnTheExecutor() async throws {
        let f = try Fixture()
        let holder = try f.lease("a")
        let held = try await holder.acquire()
        let waiter = try f.lease("b")
        let executor = waiter.executor
        await #expect {
            try await withTaskExecutorPreference(executor) {
                try await waiter.acquire(deadline: .now + .milliseconds(200))
            }
        } throws: { ($0 as? CoordinatorError)?.code == .leaseTimeout }
        // The thread blocked in the kernel could not run the timeout: another took the queue.
        #expect(executor.threadsStarted == 2)
        holder.release(held)
        // The blocked thread's grant is given straight back: a newcomer gets the lease.
        try await f.expectFree(after: held.epoch)
        // And the executor goes on serving its tasks.
        let again = try await withTaskExecutorPreference(executor) { try await waiter.acquire() }
        waiter.release(again)
    }

    @Test("a cancelled wait on the executor ends at once and never keeps the lock", .timeLimit(.minutes(1)))
    func cancelledOnTheExecutor() async throws {
        let f = try Fixture()
        let holder = try f.lease("a")
        let held = try await holder.acquire()
        let waiter = try f.lease("b")
        let executor = waiter.executor
        let waiting = Task {
            try await withTaskExecutorPreference(executor) { try await waiter.acquire() }
        }
        try await f.waitForWaiters(1)
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        holder.release(held)
        try await f.expectFree(after: held.epoch)
        #expect(waiter.current == nil)
    }
}

extension LeaseTurnTests {
    @Test(
        "the epoch follows the lock file's record; a store epoch found at or above it fails one first write, and the next holding reads the store"
    )
    func storeEpochAhead() async throws {
        let f = try Fixture()
        let first = try f.lease("a")
        let held = try await first.acquire()
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        first.release(held)
        // A tool records an epoch of its own while nobody holds the lease: the lock file's
        // record does not know of it.
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let unfenced = try UnfencedStore.open(directory: f.shared, logger: quiet)
        let intruded = try await unfenced.write { try $0.beginLeaseEpoch(name: "tool", pid: 1) }
        #expect(intruded == held.epoch + 1)
        let second = try f.lease("b")
        let taken = try await second.acquire()
        #expect(taken.epoch == held.epoch + 1)
        await #expect {
            try await f.store.write(taken.fence) { try $0.registerSoup("b", indexSpecs: []) }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        second.release(taken)
        // The release found the store ahead: the next holding reads it, and writes.
        let retaken = try await second.acquire()
        #expect(retaken.epoch == intruded + 1)
        try await f.store.write(retaken.fence) { try $0.registerSoup("b", indexSpecs: []) }
        second.release(retaken)
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [held.epoch, intruded, retaken.epoch])
        try unfenced.close()
    }

    @Test("holdings that never write pass on how the last written one ended, exactly")
    func unwrittenHoldingsPassOn() async throws {
        let f = try Fixture()
        let a = try f.lease("a")
        let first = try await a.acquire()
        try await f.store.write(first.fence) { try $0.registerSoup("a", indexSpecs: []) }
        a.release(first)
        let released = try #require(HeartbeatRecord.read(at: f.shared.writerLockPath)?.released)
        // Two holdings in a row take the lock and let it go without writing.
        for name in ["b", "c"] {
            let lease = try f.lease(name)
            let taken = try await lease.acquire()
            try await Task.sleep(for: .milliseconds(5))  // wait-ok: releases at distinct times
            lease.release(taken)
        }
        let d = try f.lease("d")
        let last = try await d.acquire()
        try await f.store.write(last.fence) { try $0.registerSoup("d", indexSpecs: []) }
        d.release(last)
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["a", "d"])
        #expect(history.first?.released == released && history.first?.releaseKind == "released")
        #expect(last.epoch == first.epoch + 3)
        #expect(LeaseAudit.check(history).isEmpty)
    }
}

@Suite("Lease clock")
struct LeaseClockTests {
    @Test(
        "timeouts fire at their deadlines, earliest first; a cancelled one never fires",
        .timeLimit(.minutes(1)))
    func firesInOrder() async throws {
        let clock = LeaseClock()
        defer { clock.stop() }
        let fired = Locked<[String]>([])
        let start = ContinuousClock.now
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Set late first: the earlier ones set after it must wake the clock sooner.
            _ = clock.schedule(at: start + .milliseconds(120)) {
                fired.withLock { $0.append("late") }
                done.resume()
            }
            let cancelled = clock.schedule(at: start + .milliseconds(40)) {
                fired.withLock { $0.append("cancelled") }
            }
            for (name, ms) in [("second", 60), ("first", 20)] {
                _ = clock.schedule(at: start + .milliseconds(ms)) {
                    fired.withLock { $0.append(name) }
                    #expect(ContinuousClock.now >= start + .milliseconds(ms))
                }
            }
            clock.cancel(cancelled)
        }
        #expect(fired.withLock { $0 } == ["first", "second", "late"])
        #expect(ContinuousClock.now >= start + .milliseconds(120))
    }
}

@Suite("Lease executor")
struct LeaseExecutorTests {
    /// A blocking wait that ends when `release` is signalled, run by the executor after the
    /// job that set it up returns; resumes the task from the thread that waited.
    final class Gate: Sendable {
        let release = DispatchSemaphore(value: 0)
        let waitedOn = Locked<pthread_t?>(nil)

        /// On `executor`: suspends until the blocking wait ends; returns the thread it resumed on.
        func blockedWait(on executor: LeaseExecutor) async -> pthread_t {
            await withTaskExecutorPreference(executor) {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    executor.blockAfterCurrentJob {
                        self.waitedOn.withLock { $0 = pthread_self() }
                        self.release.wait()
                        continuation.resume()
                    }
                }
                return pthread_self()
            }
        }
    }

    @Test(
        "a blocking wait runs on the executor's thread once the job returns, and the task resumes there",
        .timeLimit(.minutes(1)))
    func resumesOnTheWaitingThread() async throws {
        let executor = LeaseExecutor()
        defer { executor.shutDown() }
        let gate = Gate()
        let resumedOn = Task { await gate.blockedWait(on: executor) }
        gate.release.signal()
        let thread = await resumedOn.value
        #expect(gate.waitedOn.withLock { $0 } == thread)
        #expect(executor.threadsStarted == 1)
    }

    @Test(
        "a job enqueued while the thread is blocked gets a thread of its own at once", .timeLimit(.minutes(1))
    )
    func jobWhileBlocked() async throws {
        let executor = LeaseExecutor()
        defer { executor.shutDown() }
        let gate = Gate()
        let blocked = Task { await gate.blockedWait(on: executor) }
        while gate.waitedOn.withLock({ $0 }) == nil {
            try await Task.sleep(for: .milliseconds(1))  // wait-ok: until the wait has begun
        }
        // Runs although the executor's first thread is still blocked.
        let other = await Task { await withTaskExecutorPreference(executor) { pthread_self() } }.value
        #expect(other != gate.waitedOn.withLock { $0 })
        #expect(executor.threadsStarted == 2)
        gate.release.signal()
        _ = await blocked.value
    }
}
