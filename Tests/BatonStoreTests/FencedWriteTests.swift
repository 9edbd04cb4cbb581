import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Writes by capability: the fence, the unfenced handle, schema set-up under the lease")
struct FencedWriteTests {
    @Test("registering a soup that exists with the same specs is a read: nothing is committed")
    func registerExistingIsARead() async throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let fence = LeaseRecordTests.fence(store, 1, over: 0)
        let created = try await store.registerSoup(
            "notes", indexSpecs: [IndexSpec(path: "Id", type: .string)], fence: fence)
        let sequence = try store.changeSequence()
        let commits = try await store.read { try $0.commitLog() }
        #expect(commits.last?.fencedEpoch == 1)

        // Again, as every process does at start-up, with the same specs or a subset of them.
        for specs in [[IndexSpec(path: "Id", type: .string)], []] {
            let again = try await store.registerSoup("notes", indexSpecs: specs, fence: fence)
            #expect(again.name == created.name)
        }
        // By a process whose fence is stale: still a read, so it neither fails nor writes.
        let stale = LeaseRecordTests.fence(store, 1, over: 7)
        _ = try await store.registerSoup("notes", indexSpecs: [], fence: stale)
        #expect(try store.changeSequence() == sequence)
        #expect(try await store.read { try $0.commitLog() } == commits)

        // A new index is a change: a write under the fence.
        let changed = try await store.registerSoup(
            "notes", indexSpecs: [IndexSpec(path: "Name", type: .string)], fence: fence)
        #expect(Set(changed.indexSpecs.map(\.path)) == ["Id", "Name"])
        #expect(try store.changeSequence() == sequence + 1)
        // And a change under a stale fence is refused.
        await #expect {
            try await store.registerSoup("other", indexSpecs: [], fence: stale)
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(try await store.read { try $0.soupIfExists("other") } == nil)
    }

    @Test("a soup registration whose commit fails creates nothing; the next one creates it")
    func registerFailureCreatesNothing() async throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let fence = LeaseRecordTests.fence(store, 1, over: 0)
        for kind in StorageFaults.Kind.allCases {
            store.injected.failWrite(1, with: kind)
            await #expect(throws: StoreError.self) {
                try await store.registerSoup(
                    "notes", indexSpecs: [IndexSpec(path: "Id", type: .string)], fence: fence)
            }
            #expect(try await store.read { try $0.soupIfExists("notes") } == nil)
        }
        _ = try await store.registerSoup(
            "notes", indexSpecs: [IndexSpec(path: "Id", type: .string)], fence: fence)
        #expect(try await store.read { try $0.soupIfExists("notes") } != nil)
    }

    @Test("a fence works only on the store handle its lease was granted on")
    func fenceOfAnotherHandle() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        let other = try SharedStore.open(directory: fixture.store.directory, logger: Logger(label: "test"))
        let foreign = LeaseRecordTests.fence(other, 1, over: 0)
        #expect {
            try fixture.store.write(foreign) { try $0.upsert(["a": 1], into: "s") }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(try fixture.store.count(in: "s") == 0)
        #expect(!foreign.isRecorded)
    }

    @Test("an unfenced handle's commits are recorded as made outside the lease")
    func unfencedCommitsAreRecorded() async throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        try await fixture.unfenced.write { _ = try $0.upsert(["a": 1], into: "s") }
        try await fixture.unfenced.access.write { _ = try $0.upsert(["a": 2], into: "s") }
        let commits = try await fixture.store.read { try $0.commitLog() }
        #expect(commits.count == 3)
        #expect(commits.allSatisfy { $0.fencedEpoch == nil && $0.pid == getpid() })
    }

    @Test("opening a store that is up to date commits nothing")
    func openWritesNothing() throws {
        let fixture = try StoreFixture()
        let sequence = try fixture.store.changeSequence()
        // The WAL is untouched: opening wrote no frame, not even an empty migration check.
        let wal = fixture.store.directory.storePath + "-wal"
        let before = try #require(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)
        #expect(before > 0)
        let again = try SharedStore.open(directory: fixture.store.directory, logger: Logger(label: "test"))
        #expect(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int == before)
        #expect(try again.changeSequence() == sequence)
    }
}
