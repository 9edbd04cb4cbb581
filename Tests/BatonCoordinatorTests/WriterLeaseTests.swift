import BatonCoordinator
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@Suite("Writer lease")
struct WriterLeaseTests {
    func fixture() throws -> (TemporaryDirectory, SharedDirectory, SharedStore) {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        return (temp, shared, try SharedStore.open(directory: shared, logger: quiet))
    }

    @Test(
        "a waiter is granted the lease when the holder releases it, with the next epoch",
        .timeLimit(.minutes(1)))
    func handOver() async throws {
        let (temp, shared, store) = try fixture()
        defer { withExtendedLifetime(temp) {} }
        let first = try WriterLease(directory: shared, store: store, name: "a")
        let second = try WriterLease(directory: shared, store: store, name: "b")
        let held = try await first.acquire()
        #expect(try second.tryAcquire() == nil)
        let waiting = Task { try await second.acquire() }
        first.release(held)
        let next = try await waiting.value
        #expect(next.epoch == held.epoch + 1)
        let history = try await store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["a", "b"])
        #expect(history.first?.releaseKind == "released")
        second.release(next)
    }

    @Test("past its deadline a wait fails with leaseTimeout", .timeLimit(.minutes(1)))
    func deadline() async throws {
        let (temp, shared, store) = try fixture()
        defer { withExtendedLifetime(temp) {} }
        let first = try WriterLease(directory: shared, store: store, name: "a")
        let held = try await first.acquire()
        let second = try WriterLease(directory: shared, store: store, name: "b")
        await #expect {
            try await second.acquire(deadline: .now + .milliseconds(200))
        } throws: { ($0 as? CoordinatorError)?.code == .leaseTimeout }
        first.release(held)
        // The abandoned wait gives the lock back: a third party still gets it.
        let third = try WriterLease(directory: shared, store: store, name: "c")
        let got = try await third.acquire(deadline: .now + .seconds(20))
        #expect(got.epoch > held.epoch)
        third.release(got)
    }

    @Test("a cancelled wait ends at once and never keeps the lock", .timeLimit(.minutes(1)))
    func cancelled() async throws {
        let (temp, shared, store) = try fixture()
        defer { withExtendedLifetime(temp) {} }
        let first = try WriterLease(directory: shared, store: store, name: "a")
        let held = try await first.acquire()
        let second = try WriterLease(directory: shared, store: store, name: "b")
        let waiting = Task { try await second.acquire() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(second.current == nil)
        first.release(held)
        let third = try WriterLease(directory: shared, store: store, name: "c")
        let got = try await third.acquire(deadline: .now + .seconds(20))
        #expect(second.current == nil)
        let names = try await store.read { try $0.leaseHistory() }.map(\.name)
        #expect(names == ["a", "c"])
        third.release(got)
    }

    @Test(
        "while mayTry says no, the waiter holds back; a published state change wakes it",
        .timeLimit(.minutes(1)))
    func holdsBack() async throws {
        let (temp, shared, store) = try fixture()
        defer { withExtendedLifetime(temp) {} }
        try shared.ensureSubdirectory(shared.participantsPath)
        let allowed = Mutex(false)
        let lease = try WriterLease(directory: shared, store: store, name: "low")
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
        let status = ParticipantStatus(
            role: "host", name: "high", priority: 100, pid: getpid(), lifecycle: .background,
            phase: "background", epoch: nil, managerState: "stopped", updated: 1)
        try status.publish(in: shared)
        let held = try await waiting.value
        #expect(lease.current == held)
        lease.release(held)
    }
}
