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
