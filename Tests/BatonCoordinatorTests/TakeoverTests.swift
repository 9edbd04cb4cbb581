import BatonCoordinator
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Lease takeover rules (no I/O)")
struct TakeoverWatchTests {
    static let ms: UInt64 = 1_000_000
    let generation = FileIdentity(device: 1, inode: 10)

    func observation(
        beat: UInt64?, at now: UInt64, state: ProcessState = .running, generation: FileIdentity? = nil,
        term: Int64 = 2000
    ) -> TakeoverWatch.Observation {
        let record = beat.map { HeartbeatRecord(pid: 42, epoch: 7, beat: $0, termMillis: term) }
        return TakeoverWatch.Observation(
            generation: generation ?? self.generation, record: record, content: record?.line ?? "",
            holderState: state, now: now)
    }

    @Test("a holder that keeps beating is never taken over, however long it holds the lease")
    func liveHolder() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        var now: UInt64 = 1_000 * Self.ms
        for _ in 0..<400 {
            // A beat every quarter term; the waiter looks in between.
            let decision = watch.observe(observation(beat: now - 100 * Self.ms, at: now))
            guard case .wait = decision else {
                Issue.record("a live holder was taken over: \(decision)")
                return
            }
            now += 500 * Self.ms
        }
    }

    @Test("no new beat for a full term: take over, not a moment before")
    func silentHolder() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let beat: UInt64 = 10_000 * Self.ms
        #expect(
            watch.observe(observation(beat: beat, at: beat + 10 * Self.ms))
                == .wait(until: beat + 510 * Self.ms))
        #expect(
            watch.observe(observation(beat: beat, at: beat + 1_999 * Self.ms))
                == .wait(until: beat + 2_000 * Self.ms))
        #expect(
            watch.observe(observation(beat: beat, at: beat + 2_000 * Self.ms))
                == .takeOver(silentNanos: 2_000 * Self.ms))
    }

    @Test("the holder's own term counts, not the waiter's")
    func holdersTerm() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let beat: UInt64 = 10_000 * Self.ms
        #expect(
            watch.observe(observation(beat: beat, at: beat + 100 * Self.ms, term: 500))
                == .wait(until: beat + 225 * Self.ms))
        #expect(
            watch.observe(observation(beat: beat, at: beat + 500 * Self.ms, term: 500))
                == .takeOver(silentNanos: 500 * Self.ms))
    }

    @Test("seen stopped by the kernel for a quarter term shortens the wait; running again does not")
    func stoppedShortens() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let beat: UInt64 = 10_000 * Self.ms
        #expect(
            watch.observe(observation(beat: beat, at: beat + 100 * Self.ms, state: .stopped))
                == .wait(until: beat + 600 * Self.ms))
        #expect(
            watch.observe(observation(beat: beat, at: beat + 600 * Self.ms, state: .stopped))
                == .takeOver(silentNanos: 600 * Self.ms))
        // Continued (SIGCONT) but silent: back to the full term.
        var other = TakeoverWatch(defaultTerm: .seconds(2))
        _ = other.observe(observation(beat: beat, at: beat + 100 * Self.ms, state: .stopped))
        #expect(
            other.observe(observation(beat: beat, at: beat + 600 * Self.ms, state: .running))
                == .wait(until: beat + 1_100 * Self.ms))
    }

    @Test("thaw during the wait: a stopped holder that beats again is not taken over")
    func thawDuringWait() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let beat: UInt64 = 10_000 * Self.ms
        _ = watch.observe(observation(beat: beat, at: beat + 100 * Self.ms, state: .stopped))
        // SIGCONT: its heartbeat thread beats at once, before the quarter term is up.
        let fresh = beat + 400 * Self.ms
        #expect(
            watch.observe(observation(beat: fresh, at: fresh + 5 * Self.ms, state: .running))
                == .wait(until: fresh + 505 * Self.ms))
        #expect(
            watch.observe(observation(beat: fresh, at: fresh + 1_000 * Self.ms, state: .running))
                == .wait(until: fresh + 1_500 * Self.ms))
    }

    @Test("a new lock generation, or any change of the record, starts the count again")
    func newGeneration() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let start: UInt64 = 10_000 * Self.ms
        _ = watch.observe(observation(beat: nil, at: start))
        // Unparseable content that never changes still counts as silence.
        #expect(
            watch.observe(observation(beat: nil, at: start + 2_000 * Self.ms))
                == .takeOver(silentNanos: 2_000 * Self.ms))
        let later = start + 2_100 * Self.ms
        let fresh = FileIdentity(device: 1, inode: 11)
        #expect(
            watch.observe(observation(beat: nil, at: later, generation: fresh))
                == .wait(until: later + 500 * Self.ms))
    }

    @Test("a beat dated in the future or long ago dates nothing; a missing lock file waits")
    func oddBeats() {
        var watch = TakeoverWatch(defaultTerm: .seconds(2))
        let now: UInt64 = 10_000 * Self.ms
        #expect(
            watch.observe(observation(beat: now + 5_000 * Self.ms, at: now))
                == .wait(until: now + 500 * Self.ms))
        var old = TakeoverWatch(defaultTerm: .seconds(2))
        #expect(old.observe(observation(beat: 1, at: now)) == .wait(until: now + 500 * Self.ms))
        var missing = TakeoverWatch(defaultTerm: .seconds(2))
        let none = TakeoverWatch.Observation(
            generation: nil, record: nil, content: "", holderState: .unknown, now: now)
        #expect(missing.observe(none) == .wait(until: now + 500 * Self.ms))
    }

    @Test("/proc/PID/stat states, with parentheses and spaces in the command")
    func processStates() {
        #expect(ProcessState.parse(stat: "123 (baton) T 1 123 123 0 -1") == .stopped)
        #expect(ProcessState.parse(stat: "123 (a) b (c)) t 1") == .stopped)
        #expect(ProcessState.parse(stat: "123 (baton) S 1") == .running)
        #expect(ProcessState.parse(stat: "123 (baton) R 1") == .running)
        #expect(ProcessState.parse(stat: "123 (baton) D 1") == .hung)
        #expect(ProcessState.parse(stat: "123 (baton) Z 1") == .dead)
        #expect(ProcessState.parse(stat: "garbage") == .unknown)
        #expect(ProcessState.of(getpid()) == .running)
        #expect(ProcessState.of(Int32.max) == .dead)
    }

    @Test("heartbeat records round-trip at a fixed length; anything else does not parse")
    func records() {
        let record = HeartbeatRecord(pid: 123, epoch: 45, beat: 6_789_000_000, termMillis: 2000)
        #expect(record.line.utf8.count == HeartbeatRecord.length)
        #expect(HeartbeatRecord(parsing: record.line) == record)
        let taker = HeartbeatRecord(pid: 9, epoch: 12, beat: 1, termMillis: 500, takenOver: 11)
        #expect(HeartbeatRecord(parsing: taker.line)?.takenOver == 11)
        let widest = HeartbeatRecord(
            pid: .max, epoch: .max, beat: .max, termMillis: 3_600_000, takenOver: .max)
        #expect(widest.line.utf8.count == HeartbeatRecord.length)
        #expect(HeartbeatRecord(parsing: widest.line) == widest)
        // Every number at its widest, signs included: the record is built whole (past the fixed
        // length when it must be), never cut.
        let longest = HeartbeatRecord(
            pid: .min, epoch: .min, beat: .max, termMillis: .min, takenOver: .min, released: .min,
            closing: LeaseClosing(epoch: .min, at: .min, kind: .takenOver))
        let longestText =
            "baton-lease pid=-2147483648 epoch=-9223372036854775808 beat=18446744073709551615"
            + " term=-9223372036854775808 from=-9223372036854775808 released=-9223372036854775808"
            + " close=-9223372036854775808:-9223372036854775808:t"
        #expect(
            longest.line == longestText + String(repeating: " ", count: 223 - longestText.utf8.count) + "\n")
        #expect(HeartbeatRecord(parsing: "123\n") == nil)
        #expect(HeartbeatRecord(parsing: "") == nil)
        #expect(HeartbeatRecord(parsing: "baton-lease pid=0 epoch=1 beat=2 term=3") == nil)
        #expect(HeartbeatRecord(parsing: "baton-lease pid=1 epoch=x beat=2 term=3") == nil)
        // A release, and the closing a holder carries, round-trip.
        for kind in [LeaseClosing.Kind.released, .takenOver, .renewed] {
            let released = HeartbeatRecord(
                pid: 7, epoch: 3, beat: 5, termMillis: 2000, released: 1_700_000_000_123,
                closing: LeaseClosing(epoch: 2, at: 1_700_000_000_000, kind: kind))
            #expect(released.line.utf8.count == HeartbeatRecord.length)
            #expect(HeartbeatRecord(parsing: released.line) == released)
        }
        let valid = "baton-lease pid=1 epoch=2 beat=3 term=4 from=0 released=0 close=-"
        #expect(HeartbeatRecord(parsing: valid)?.epoch == 2)
        // The line, byte for byte: the fields, then spaces to the fixed length, then a newline.
        let exact = HeartbeatRecord(
            pid: 1, epoch: 2, beat: 3, termMillis: 4, released: 1_700_000_000_123,
            closing: LeaseClosing(epoch: 1, at: -5, kind: .renewed))
        let text = "baton-lease pid=1 epoch=2 beat=3 term=4 from=0 released=1700000000123 close=1:-5:n"
        #expect(
            exact.line == text + String(repeating: " ", count: HeartbeatRecord.length - 1 - text.count) + "\n"
        )
        #expect(HeartbeatRecord(parsing: "  " + valid + "\t\r\n")?.epoch == 2)
        for junk in [
            valid + " extra=1",  // a ninth field
            valid.replacingOccurrences(of: "epoch=2 beat=3", with: "beat=3 epoch=2"),  // out of order
            valid.replacingOccurrences(of: "pid=1", with: "pid=-1"),
            valid.replacingOccurrences(of: "pid=1", with: "pid=4294967296"),  // past Int32
            valid.replacingOccurrences(of: "pid=1", with: "pid1"),
            valid.replacingOccurrences(of: "pid=1", with: "pids=1"),
            valid.replacingOccurrences(of: "close=-", with: "close=1:2"),
            valid.replacingOccurrences(of: "close=-", with: "close=1:2:x"),
            valid.replacingOccurrences(of: "close=-", with: "close=1::r"),
            valid.replacingOccurrences(of: "baton-lease", with: "baton-leases"),
        ] {
            #expect(HeartbeatRecord(parsing: junk) == nil, "\(junk)")
            #expect(HeartbeatRecord(parsing: Array(junk.utf8)) == nil, "\(junk)")
        }
        // The bytes read from a lock file parse as their text does.
        for line in [record.line, taker.line, widest.line, valid, exact.line, "  " + valid + "\t\r\n", ""] {
            #expect(HeartbeatRecord(parsing: Array(line.utf8)) == HeartbeatRecord(parsing: line), "\(line)")
        }
        let signs = ["pid=+1", "epoch=-2", "beat=+3", "term=4", "released=-0", "close=-1:+2:r"]
        let signed =
            "baton-lease "
            + signs.joined(separator: " ").replacingOccurrences(of: "term=4", with: "term=4 from=0")
        #expect(HeartbeatRecord(parsing: Array(signed.utf8)) == HeartbeatRecord(parsing: signed))
        #expect(HeartbeatRecord(parsing: signed)?.epoch == -2)
        for overflow in [
            "epoch=9223372036854775808", "beat=18446744073709551616", "beat=-1", "epoch=", "epoch=+",
        ] {
            let line = valid.replacingOccurrences(
                of: overflow.hasPrefix("beat") ? "beat=3" : "epoch=2", with: overflow)
            #expect(HeartbeatRecord(parsing: line) == nil, "\(line)")
        }
        #expect(
            HeartbeatRecord(
                parsing: valid.replacingOccurrences(of: "epoch=2", with: "epoch=-9223372036854775808"))?.epoch
                == .min)
    }
}

@Suite("Lease takeover in the store and the lock file", .timeLimit(.minutes(1)))
struct LeaseTakeoverTests {
    /// A shared directory and its store.
    let fixture: WriterLeaseTests.Fixture
    var shared: SharedDirectory { fixture.shared }
    var store: SharedStore { fixture.store }

    init() throws {
        fixture = try WriterLeaseTests.Fixture()
    }

    /// A holder that locked the lease file, recorded its epoch (unless `recorded` is false: it
    /// froze before its first write), beat once at `beatAge` ago and then went silent, as a
    /// frozen process would.
    func frozenHolder(beatAge: Duration = .seconds(10), recorded: Bool = true) throws -> (
        lock: FileLock, fence: LeaseFence
    ) {
        let lock = try FileLock(path: shared.writerLockPath, in: shared)
        #expect(try lock.tryLock())
        let previous = try store.read { try $0.leaseEpoch() }
        let fence = LeaseFence(
            store: store, epoch: previous + 1, holder: "frozen", pid: getpid(),
            granted: WallClock.nowMillis(),
            previous: previous, closing: nil, stillHeld: { lock.isStillAtPath })
        if recorded { try store.write(fence) { try $0.registerSoup("frozen", indexSpecs: []) } }
        let age = UInt64(beatAge.components.seconds) * 1_000_000_000
        let record = HeartbeatRecord(
            pid: getpid(), epoch: fence.epoch, beat: MonotonicClock.nanos() - age, termMillis: 200)
        lock.overwrite(record.line)
        return (lock, fence)
    }

    @Test("a silent holder is taken over: next epoch, old interval taken-over, its fenced writes fail")
    func takeover() async throws {
        let (old, fence) = try frozenHolder()
        let epoch = fence.epoch
        let taker = try WriterLease(directory: shared, store: store, name: "taker", term: .milliseconds(200))
        let held = try await taker.acquire(deadline: .now + .seconds(20))
        #expect(held.epoch == epoch + 1)
        #expect(held.takeover?.epoch == epoch)
        #expect(held.takeover?.name == "frozen")
        #expect(!old.isStillAtPath)
        #expect(taker.holdsLockFile)
        let history = try await store.read { try $0.leaseHistory() }
        #expect(history.map(\.releaseKind) == ["taken-over", nil])
        #expect(throws: StoreError.self) {
            try store.write(fence) { try $0.registerSoup("late", indexSpecs: []) }
        }
        // The taker's heartbeat is in the lock file, naming its epoch.
        let record = HeartbeatRecord.read(at: shared.writerLockPath)
        #expect(record?.epoch == held.epoch)
        #expect(record?.takenOver == epoch)
        taker.release(held)
        old.unlock()
        let after = try LeaseHistory.read(store: store, directory: shared)
        #expect(after.map(\.releaseKind) == ["taken-over", "released"])
        #expect(LeaseAudit.check(after).isEmpty)
    }

    @Test("a holder frozen before its first write is taken over; thawed, its fence never records")
    func takeoverBeforeFirstWrite() async throws {
        let (old, fence) = try frozenHolder(recorded: false)
        let taker = try WriterLease(directory: shared, store: store, name: "taker", term: .milliseconds(200))
        let held = try await taker.acquire(deadline: .now + .seconds(20))
        // The epoch the frozen holder took is never reused, and the thawed one names it.
        #expect(held.epoch == fence.epoch + 1)
        #expect(held.takeover?.epoch == fence.epoch)
        #expect(HeartbeatRecord.read(at: shared.writerLockPath)?.takenOver == fence.epoch)
        #expect {
            try store.write(fence) { try $0.registerSoup("late", indexSpecs: []) }
        } throws: { ($0 as? StoreError)?.code == .staleEpoch }
        #expect(!fence.isRecorded)
        #expect(try await store.read { try $0.leaseHistory() }.map(\.epoch) == [held.epoch])
        try await store.write(held.fence) { try $0.registerSoup("taker", indexSpecs: []) }
        taker.release(held)
        old.unlock()
    }

    @Test("two takers of one silent holder: exactly one wins, the other waits on the new lock")
    func twoTakers() async throws {
        let (old, fence) = try frozenHolder()
        let first = try WriterLease(directory: shared, store: store, name: "one", term: .milliseconds(200))
        let second = try WriterLease(directory: shared, store: store, name: "two", term: .milliseconds(200))
        async let a = try? first.acquire(deadline: .now + .seconds(3))
        async let b = try? second.acquire(deadline: .now + .seconds(3))
        let winners = await [a, b].compactMap { $0 }
        // The winner keeps beating, so the loser is never allowed to take it over in turn.
        #expect(winners.count == 1)
        #expect(winners.first?.epoch == fence.epoch + 1)
        let history = try await store.read { try $0.leaseHistory() }
        #expect(history.count == 2)
        for lease in [first, second] { if let held = lease.current { lease.release(held) } }
        old.unlock()
    }

    @Test("a holder that keeps beating is not taken over; its release wakes the waiter in the kernel")
    func liveHolderIsNotTakenOver() async throws {
        let holder = try WriterLease(directory: shared, store: store, name: "live", term: .milliseconds(200))
        let held = try await holder.acquire()
        try await store.write(held.fence) { try $0.registerSoup("live", indexSpecs: []) }
        let waiter = try WriterLease(
            directory: shared, store: store, name: "waiter", term: .milliseconds(200))
        await #expect(throws: CoordinatorError.self) {
            // Ten terms: a takeover would have happened long before.
            _ = try await waiter.acquire(deadline: .now + .seconds(2))
        }
        let waiting = Task { try await waiter.acquire(deadline: .now + .seconds(20)) }
        holder.release(held)
        let next = try await waiting.value
        #expect(next.takeover == nil)
        #expect(next.epoch == held.epoch + 1)
        try await store.write(next.fence) { try $0.registerSoup("waiter", indexSpecs: []) }
        waiter.release(next)
        let history = try LeaseHistory.read(store: store, directory: shared)
        #expect(history.map(\.releaseKind) == ["released", "released"])
    }

    @Test("a takeover that finds the epoch moved, or the holder changed, takes nothing")
    func movedLease() throws {
        let (old, fence) = try frozenHolder()
        let epoch = fence.epoch
        let wrongEpoch = try store.takeOverLease(
            from: epoch + 5, epoch: epoch + 6, closing: nil, name: "x", pid: 1, deadline: .now + .seconds(1)
        ) { Issue.record("installed a lock file for a lease that moved") }
        #expect(wrongEpoch == nil)
        #expect(throws: StoreError.self) {
            _ = try store.takeOverLease(
                from: epoch, epoch: epoch + 1, closing: nil, name: "x", pid: 1, deadline: .now + .seconds(1)
            ) { throw StoreError(.staleEpoch, "the holder beat since") }
        }
        #expect(try store.read { try $0.leaseEpoch() } == epoch)
        #expect(try store.read { try $0.leaseHistory() }.count == 1)
        old.unlock()
    }

    @Test("a holder's epoch is not recorded once a takeover replaced its lock file")
    func beginAfterTakeover() throws {
        let lock = try FileLock(path: shared.writerLockPath, in: shared)
        #expect(try lock.tryLock())
        try FileManager.default.removeItem(atPath: shared.writerLockPath)
        let fence = LeaseFence(
            store: store, epoch: 1, holder: "late", pid: getpid(), granted: WallClock.nowMillis(),
            previous: 0,
            closing: nil,
            stillHeld: { lock.isStillAtPath })
        #expect(throws: StoreError.self) {
            try store.write(fence) { try $0.registerSoup("late", indexSpecs: []) }
        }
        #expect(try store.read { try $0.leaseEpoch() } == 0)
        lock.unlock()
    }

    @Test(
        "a release is recorded by the next holder's first write, from the lock file; a holder that never writes passes it on"
    )
    func releaseRecordedByNextHolder() async throws {
        let a = try WriterLease(directory: shared, store: store, name: "a", term: .milliseconds(200))
        let b = try WriterLease(directory: shared, store: store, name: "b", term: .milliseconds(200))
        let c = try WriterLease(directory: shared, store: store, name: "c", term: .milliseconds(200))
        let first = try await a.acquire()
        try await store.write(first.fence) { try $0.registerSoup("a", indexSpecs: []) }
        a.release(first)
        // Released, but only the lock file says so yet.
        #expect(try await store.read { try $0.leaseHistory() }.last?.released == nil)
        let folded = try LeaseHistory.read(store: store, directory: shared)
        #expect(folded.last?.releaseKind == "released")
        let releasedAt = try #require(folded.last?.released)
        // b holds the lease and lets go without writing: nothing of it reaches the store.
        let second = try await b.acquire()
        #expect(second.epoch == first.epoch + 1)
        b.release(second)
        let third = try await c.acquire()
        #expect(third.epoch == second.epoch + 1, "an epoch taken without writing is not reused")
        try await store.write(third.fence) { try $0.registerSoup("c", indexSpecs: []) }
        let history = try await store.read { try $0.leaseHistory() }
        #expect(history.map(\.epoch) == [first.epoch, third.epoch])
        #expect(history.first?.releaseKind == "released")
        #expect(history.first?.released == releasedAt)
        #expect(LeaseAudit.check(history).isEmpty)
        c.release(third)
    }
}
