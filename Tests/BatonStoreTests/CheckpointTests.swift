import Foundation
import Testing

@testable import BatonStore

@Suite("WAL checkpoints")
struct CheckpointTests {
    /// Writes about 2,500 WAL frames (pages) of new records, 50 records per transaction.
    func writePages(_ unfenced: UnfencedStore) throws {
        let filler = String(repeating: "x", count: 3000)
        for batch in 0..<50 {
            try unfenced.write { transaction in
                for index in 0..<50 {
                    try transaction.upsert(
                        ["n": .int(Int64(batch * 50 + index)), "f": .string(filler)], into: "s")
                }
            }
        }
    }

    func fileSize(_ store: SharedStore) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: store.directory.storePath)
        return (attributes[.size] as? Int) ?? 0
    }

    @Test("without a hold, commits checkpoint as SQLite's own rule does (the database file grows)")
    func checkpointsByDefault() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        let before = try fileSize(fixture.store)
        try writePages(fixture.unfenced)
        #expect(try fileSize(fixture.store) > before + 1_000_000)
    }

    @Test("held (as by the lease holder), checkpoints wait for the release and run then")
    func heldUntilRelease() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("s", indexSpecs: [])
        let before = try fileSize(store)
        store.holdCheckpoints()
        try writePages(fixture.unfenced)
        // Everything is still in the WAL: the database file has not been written.
        #expect(try fileSize(store) == before)
        #expect(try store.count(in: "s") == 2500)
        store.releaseCheckpoints()
        #expect(try fileSize(store) > before + 1_000_000)
    }

    @Test("a checkpoint asked for at the release (a stop's) is due then below the threshold, once")
    func checkpointAtRelease() {
        let rule = WALCheckpoints()
        // Nothing held: nothing to wait for (the store runs it at once).
        #expect(!rule.checkpointAtRelease())
        rule.hold()
        #expect(!rule.committed(frames: 10))
        #expect(rule.checkpointAtRelease())
        #expect(rule.release())
        // Asked for once: the next turn goes by the threshold again.
        rule.hold()
        #expect(!rule.committed(frames: 12))
        #expect(!rule.release())
        // Everything copied back already: nothing is due even when asked.
        rule.checkpointed(walFrames: 12, copied: 12)
        rule.hold()
        #expect(rule.checkpointAtRelease())
        #expect(!rule.release())
    }

    @Test("a store's checkpoint after the release copies a few frames back once the hold ends")
    func storeCheckpointsAfterRelease() async throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        try await fixture.unfenced.write { transaction in
            try transaction.upsert(["f": .string(String(repeating: "x", count: 20_000))], into: "s")
        }
        let before = try fileSize(store)
        store.holdCheckpoints()
        store.checkpointAfterRelease()
        #expect(try fileSize(store) == before)
        store.releaseCheckpointsAfterwards()
        // It runs on another thread: look until it has (or 10 s have gone by).
        let end = ContinuousClock.now + .seconds(10)
        while try fileSize(store) == before, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(5))  // wait-ok: polls a file another thread writes
        }
        #expect(try fileSize(store) > before)
    }

    @Test(
        "a release checkpoints once a threshold of frames was added since the last copy back, not on every turn of a WAL that could not start over"
    )
    func releaseCountsFramesSinceTheLastCopy() {
        let rule = WALCheckpoints()
        let threshold = WALCheckpoints.threshold
        // A holding writes 1,500 frames: below the held limit, so its commits leave them.
        rule.hold()
        #expect(!rule.committed(frames: 1_500))
        #expect(rule.release())
        // The checkpoint after the release ran while the next holder wrote: it copied what it
        // could, and the WAL did not start over.
        rule.checkpointed(walFrames: 1_520, copied: 1_500)
        // The next turns add a few frames each: no checkpoint, although the WAL is over the
        // threshold (the old rule went by its size and checkpointed every one of them).
        for frames in stride(from: CInt(1_526), to: 1_500 + threshold, by: 6) {
            rule.hold()
            #expect(!rule.committed(frames: frames))
            #expect(!rule.release(), "frames \(frames)")
        }
        // A threshold's worth since the copy: due again.
        rule.hold()
        #expect(!rule.committed(frames: 1_500 + threshold))
        #expect(rule.release())
        // A checkpoint that did not say (SQLITE_BUSY elsewhere) changes nothing: still due.
        rule.checkpointed(walFrames: -1, copied: -1)
        rule.hold()
        #expect(rule.release())
    }

    @Test("a WAL that started over counts from its start; the held limit still checkpoints in the commit")
    func walStartedOver() {
        let rule = WALCheckpoints()
        rule.checkpointed(walFrames: 3_000, copied: 3_000)
        rule.hold()
        // Fewer frames than were copied: the WAL started over (another process's writer).
        #expect(!rule.committed(frames: 1_200))
        #expect(rule.release())
        // Without a hold, SQLite's own rule: its size.
        #expect(rule.committed(frames: WALCheckpoints.threshold))
        // While held, the commit itself checkpoints at the held limit.
        rule.hold()
        #expect(rule.committed(frames: WALCheckpoints.limitWhileHeld))
        #expect(!rule.committed(frames: WALCheckpoints.limitWhileHeld - 1) && rule.release())
    }

    @Test(
        "a release skips the checkpoint another process made already: the wal-index says what is copied back")
    func releaseSeesOtherProcessesCopies() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        store.holdCheckpoints()
        try writePages(fixture.unfenced)
        let shm = store.directory.storePath + "-shm"
        // This process counted its commits only: due. The wal-index agrees: nothing copied yet.
        let mine = WALCheckpoints(shmPath: shm)
        mine.hold()
        #expect(!mine.committed(frames: 2_000))
        #expect(mine.release())
        // Another process (here the store's own rule, released) copies the WAL back...
        store.releaseCheckpoints()
        // ...and a process that counted the same commits sees it, where its own count says due.
        let other = WALCheckpoints(shmPath: shm)
        other.hold()
        #expect(!other.committed(frames: 2_000))
        #expect(!other.release())
        // Without the wal-index, its own count decides; one that appears later (a new store has
        // none until its first write) is read from then on.
        let later = store.directory.path + "/later-shm"
        let blind = WALCheckpoints(shmPath: later)
        blind.hold()
        #expect(!blind.committed(frames: 2_000))
        #expect(blind.release())
        try FileManager.default.copyItem(atPath: shm, toPath: later)
        blind.hold()
        #expect(!blind.release())
    }
}
