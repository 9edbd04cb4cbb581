import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Write guard: lock waits, store file identity, injected faults")
struct WriteGuardTests {
    func open(_ path: String, busyTimeout: Duration = .seconds(10)) throws -> UnfencedStore {
        try UnfencedStore.open(
            directory: try SharedDirectory(path: path), busyTimeout: busyTimeout, faults: StorageFaults(),
            logger: Logger(label: "test"))
    }

    @Test("a write waiting for a lock held elsewhere is abandoned by interrupt(); later writes wait briefly")
    func interruptAbandonsLockWait() async throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d", busyTimeout: .seconds(60))
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let lock = try ForeignWriteLock(path: store.directory.storePath)
        let waiting = Task.detached {
            try await unfenced.write { _ = try $0.upsert(["a": 1], into: "s") }
        }
        // The write is blocked on the lock (60 s busy timeout) until the interrupt arrives.
        store.interrupt()
        await #expect(throws: StoreError.self) { try await waiting.value }
        // A later write waits at most the brief wait, not the busy timeout, until resumed.
        let started = ContinuousClock.now
        #expect(throws: StoreError.self) {
            try unfenced.write { _ = try $0.upsert(["a": 2], into: "s") }
        }
        let waited = ContinuousClock.now - started
        #expect(waited < .seconds(30), "waited \(waited) of a 60 s busy timeout")
        lock.release()
        store.resumeWrites()
        try await unfenced.write { _ = try $0.upsert(["a": 3], into: "s") }
        #expect(try store.count(in: "s") == 1)
    }

    @Test("whether SQLite's write lock is held elsewhere is told without waiting, and a free lock is let go")
    func writeLockProbe() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        try unfenced.registerSoup("s", indexSpecs: [])
        let path = unfenced.store.directory.storePath
        #expect(try !ForeignWriteLock.isHeld(path: path))
        // The probe let the lock go: a write goes through.
        try unfenced.write { _ = try $0.upsert(["a": 1], into: "s") }
        let lock = try ForeignWriteLock(path: path)
        #expect(try ForeignWriteLock.isHeld(path: path))
        lock.release()
        #expect(try !ForeignWriteLock.isHeld(path: path))
        #expect(throws: StoreError.self) {
            try ForeignWriteLock.isHeld(path: temp.path + "/none/store.sqlite")
        }
    }

    @Test("a write's own deadline ends its wait for a lock held elsewhere; nothing is written")
    func writeDeadline() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let fence = LeaseRecordTests.fence(store, 1, over: 0)
        let lock = try ForeignWriteLock(path: store.directory.storePath)
        #expect(throws: StoreError.self) {
            try store.write(fence, deadline: .now + .milliseconds(100)) {
                _ = try $0.upsert(["a": 1], into: "s")
            }
        }
        lock.release()
        #expect(try store.read { try $0.leaseHistory() }.isEmpty)
        #expect(!fence.isRecorded)
        try store.write(fence) { _ = try $0.upsert(["a": 1], into: "s") }
        #expect(try store.read { try $0.leaseHistory() }.map(\.epoch) == [1])
    }

    @Test("a store file replaced or deleted under an open store: writes are refused by name")
    func replacedStoreFile() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        #expect(store.fileProblem() == nil)
        let other = try open(temp.path + "/other")
        try other.close()
        let path = store.directory.storePath
        #expect(rename(temp.path + "/other/store.sqlite", path) == 0)
        #expect(store.fileProblem()?.contains("replaced") == true)
        #expect {
            try unfenced.write { _ = try $0.upsert(["a": 1], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .storeFileChanged }
        try FileManager.default.removeItem(atPath: path)
        #expect(store.fileProblem()?.contains("deleted") == true)
    }

    @Test("no new store is made beside a write-ahead log whose store is gone")
    func refusesOrphanWAL() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        try store.close()
        let path = temp.path + "/d/store.sqlite"
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        try FileManager.default.moveItem(atPath: path, toPath: temp.path + "/moved.sqlite")
        #expect {
            _ = try open(temp.path + "/d")
        } throws: { ($0 as? StoreError)?.code == .storeFileChanged && "\($0)".contains("store.sqlite-wal") }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("an injected fault fails the commit and rolls back everything the transaction wrote")
    func injectedFaultRollsBack() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let sequence = try store.changeSequence()
        for kind in StorageFaults.Kind.allCases {
            store.injected.failWrite(1, with: kind)
            #expect(throws: StoreError.self) {
                try unfenced.write { transaction in
                    for index in 0..<10 { _ = try transaction.upsert(["n": .int(Int64(index))], into: "s") }
                }
            }
        }
        #expect(try store.count(in: "s") == 0)
        #expect(try store.changeSequence() == sequence)
        try unfenced.write { _ = try $0.upsert(["n": 1], into: "s") }
        #expect(try store.count(in: "s") == 1)
    }

    @Test("disk-full: writes that need room fail with SQLITE_FULL, a write in place commits")
    func diskFull() throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let entry = try unfenced.upsert(["n": 0], into: "s")
        store.injected.fillDisk(true)
        #expect {
            try unfenced.write { transaction in
                for index in 0..<2_000 {
                    _ = try transaction.upsert(
                        ["n": .int(Int64(index)), "pad": .string(String(repeating: "x", count: 200))],
                        into: "s")
                }
            }
        } throws: { "\($0)".contains("full") }
        try unfenced.write { _ = try $0.upsert(["n": 7], into: "s", entryId: entry.entryId) }
        store.injected.fillDisk(false)
        try unfenced.write { transaction in
            for index in 0..<2_000 { _ = try transaction.upsert(["n": .int(Int64(index))], into: "s") }
        }
        #expect(try store.count(in: "s") == 2_001)
    }
}

@Suite("Async writes under the lease, on the caller's thread or GRDB's queue")
struct LeaseWritePathTests {
    func open(_ path: String) throws -> UnfencedStore {
        try UnfencedStore.open(
            directory: try SharedDirectory(path: path), faults: StorageFaults(), logger: Logger(label: "test")
        )
    }

    @Test("many async lease writes at once: each commits once, fenced, in one sequence")
    func concurrentLeaseWrites() async throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let fence = LeaseRecordTests.fence(store, 1, over: 0)
        let before = try store.changeSequence()
        // Some run on their caller's thread (none other in flight), the rest on GRDB's queue.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try await store.write(fence) {
                        _ = try $0.upsert(["n": .int(Int64(index))], into: "s")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.count(in: "s") == 64)
        #expect(try store.changeSequence() == before + 64)
        let log = try await store.read { try $0.commitLog() }.suffix(64)
        #expect(log.allSatisfy { $0.fencedEpoch == 1 })
        #expect(Set(log.map(\.sequence)).count == 64)
    }

    @Test(
        "an async lease write alone in flight: a stale fence, a throwing body and a failed commit write nothing"
    )
    func failuresRollBack() async throws {
        let temp = try TemporaryDirectory()
        let unfenced = try open(temp.path + "/d")
        let store = unfenced.store
        try unfenced.registerSoup("s", indexSpecs: [])
        let first = LeaseRecordTests.fence(store, 1, over: 0)
        try await store.write(first) { _ = try $0.upsert(["n": 0], into: "s") }
        let taker = LeaseRecordTests.fence(store, 2, over: 1, holder: "ext")
        try await store.write(taker) { _ = try $0.upsert(["n": 1], into: "s") }
        let sequence = try store.changeSequence()
        await #expect {
            try await store.write(first) { _ = try $0.upsert(["n": 2], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.write(taker) { transaction in
                _ = try transaction.upsert(["n": 3], into: "s")
                throw Refused()
            }
        }
        for kind in StorageFaults.Kind.allCases {
            store.injected.failWrite(1, with: kind)
            await #expect(throws: StoreError.self) {
                try await store.write(taker) { _ = try $0.upsert(["n": 4], into: "s") }
            }
        }
        #expect(try store.count(in: "s") == 2)
        #expect(try store.changeSequence() == sequence)
        try await store.write(taker) { _ = try $0.upsert(["n": 5], into: "s") }
        #expect(try store.count(in: "s") == 3)
    }
}
