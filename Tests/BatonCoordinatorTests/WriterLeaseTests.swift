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

        /// Waits until `count` requests for `D/writer.lock` wait in the kernel: a contended
        /// wait blocks in `flock`, and `/proc/locks` lists each blocked request (`->`) with the
        /// file's inode.
        func waitForWaiters(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while blockedRequests() < count {
                try #require(ContinuousClock.now < deadline, "the waiters never blocked in the kernel")
                try await Task.sleep(for: .milliseconds(1))  // wait-ok: /proc/locks has no doorbell
            }
        }

        /// The `flock` requests blocked on `D/writer.lock` now, as `/proc/locks` lists them.
        func blockedRequests() -> Int {
            var info = stat()
            guard stat(shared.writerLockPath, &info) == 0 else { return 0 }
            // "7: -> FLOCK  ADVISORY  WRITE 4242 fe:00:1234567 0 EOF": major:minor:inode.
            let inode = ":\(info.st_ino) "
            return Self.procLocks().split(separator: "\n").count { $0.contains(" -> ") && $0.contains(inode) }
        }

        /// `/proc/locks`, read to its end: Foundation reads a file whose size is 0, as `/proc`
        /// reports it, only to its first 4 KiB, and the whole suite's locks fill more.
        static func procLocks() -> String {
            let fd = open("/proc/locks", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return "" }
            defer { close(fd) }
            var text: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                text += buffer[..<count]
            }
            return String(decoding: text, as: UTF8.self)
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
        let nameLock = try FileLock(path: f.shared.participantsPath + "/high.lock", in: f.shared)
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

/// Issue 53: a contended wait once announced itself in `D/writer.waiters`, opened without
/// `O_NOFOLLOW`: planted as a symlink to the store's WAL, the wait wrote its slot into the WAL and
/// zeroed it on giving up. Nothing opens that file any more; one left there is ignored.
extension WriterLeaseTests {
    /// What `D/writer.waiters` is before the wait.
    enum PlantedWaiters: String, CaseIterable, Sendable {
        /// Nothing: the wait must not create it.
        case absent
        /// A symlink to `D/store.sqlite-wal`.
        case storeWAL
        /// A symlink to another file in D.
        case fileInDirectory
        /// A symlink to a file outside D.
        case fileOutside
        /// A symlink to a path where there is no file.
        case dangling
    }

    @Test(
        "a contended wait that gives up leaves D/writer.waiters alone, whatever it is or points at",
        .timeLimit(.minutes(1)), arguments: PlantedWaiters.allCases)
    func plantedWaitersFile(_ planted: PlantedWaiters) async throws {
        let f = try Fixture()
        let waitersPath = f.shared.path + "/writer.waiters"
        let target: String? =
            switch planted {
            case .absent: nil
            case .storeWAL: f.shared.storePath + "-wal"
            case .fileInDirectory: f.shared.path + "/notes"
            case .fileOutside: f.temp.path + "/outside"
            case .dangling: f.temp.path + "/nowhere"
            }
        // A file of bytes that a slot written or zeroed anywhere in its first 4 KiB would change.
        if let target, planted == .fileInDirectory || planted == .fileOutside {
            try Data(repeating: 0xA5, count: 8192).write(to: URL(fileURLWithPath: target))
        }
        // Planted before any lease is made: the old board was opened (and created) by the
        // lease's initializer.
        if let target {
            try FileManager.default.createSymbolicLink(atPath: waitersPath, withDestinationPath: target)
        }
        let holder = try f.lease("holder")
        let held = try await holder.acquire()
        // A write under the lease: the WAL has its header and frames, as after any writer.
        try await f.store.write(held.fence) { try $0.registerSoup("a", indexSpecs: []) }
        /// The target's bytes now (nil when there is no file).
        func targetBytes() -> Data? { target.flatMap { FileManager.default.contents(atPath: $0) } }
        let before = targetBytes()
        if planted != .absent && planted != .dangling { try #require((before?.count ?? 0) > 32) }

        let waiter = try f.lease("waiter")
        let waiting = Task { try await waiter.acquire(deadline: .now + .seconds(3)) }
        // While it waits (blocked in the kernel) ...
        try await f.waitForWaiters(1)
        #expect(targetBytes() == before, "written while waiting")
        // ... and once it gave up.
        await #expect {
            try await waiting.value
        } throws: { ($0 as? CoordinatorError)?.code == .leaseTimeout }
        #expect(targetBytes() == before, "written by the wait that gave up")
        if let target {
            // Still the symlink that was planted, and a dangling one still points at nothing.
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: waitersPath) == target)
            if planted == .dangling { #expect(!FileManager.default.fileExists(atPath: target)) }
        } else {
            #expect(!FileManager.default.fileExists(atPath: waitersPath))
        }
        holder.release(held)
        // The store still reads, with the holding recorded.
        let history = try await f.store.read { try $0.leaseHistory() }
        #expect(history.map(\.name) == ["holder"])
    }
}
