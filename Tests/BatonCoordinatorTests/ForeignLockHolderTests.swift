import BatonStore
import BatonTestSupport
import Foundation
import Testing

@testable import BatonCoordinator

/// Lock files held by a process that is not Baton (`flock D/writer.lock …`), as the kernel's
/// `/proc/locks` and the lock file's record say together (no processes).
@Suite("Foreign lock holders")
struct ForeignLockHolderTests {
    static let flock = LockHolder(
        pid: 1234, kind: .flock, access: .write, command: "flock D/writer.lock sleep 12")
    static func record(pid: Int32, released: Int64 = 0) -> HeartbeatRecord {
        HeartbeatRecord(pid: pid, epoch: 3, beat: 1, termMillis: 2000, released: released)
    }

    @Test("status: a holder that is neither a participant nor the record's holding is foreign")
    func foreignInStatus() {
        let tool = LockHolder(pid: 77, kind: .flock, access: .write)
        let participant = LockHolder(pid: 42, kind: .flock, access: .write)
        let ofd = LockHolder(pid: -1, kind: .openFileDescription, access: .write)
        // A tool holding the lease (its record, not released) and a participant are not foreign.
        #expect(
            WriterLockHolders.foreign(
                [tool, participant], record: Self.record(pid: 77), participantPids: [42]
            ).isEmpty)
        // The record says its holder let go: whoever holds the lock now is not it.
        #expect(
            WriterLockHolders.foreign(
                [tool], record: Self.record(pid: 77, released: 5), participantPids: [42])
                == [tool])
        #expect(
            WriterLockHolders.foreign([Self.flock, ofd], record: nil, participantPids: [42]) == [
                Self.flock, ofd,
            ])
    }

    @Test("takeover: the kernel's holder replaces the record's when the record let go or names another")
    func takenOverFrom() {
        let host = LockHolder(pid: 99, kind: .flock, access: .write)
        // The kernel agrees with the record (a frozen holder): the record's holder stands.
        #expect(WriterLockHolders.takenOverFrom([host], record: Self.record(pid: 99), taker: 7).isEmpty)
        // The kernel says nothing: the record's holder stands.
        #expect(
            WriterLockHolders.takenOverFrom(nil, record: Self.record(pid: 99, released: 5), taker: 7).isEmpty)
        #expect(
            WriterLockHolders.takenOverFrom([], record: Self.record(pid: 99, released: 5), taker: 7).isEmpty)
        // "host released cleanly", but pid 1234 holds the lock; or the record names someone else.
        #expect(
            WriterLockHolders.takenOverFrom([Self.flock], record: Self.record(pid: 99, released: 5), taker: 7)
                == [
                    Self.flock
                ])
        #expect(
            WriterLockHolders.takenOverFrom([Self.flock], record: Self.record(pid: 99), taker: 7) == [
                Self.flock
            ])
        #expect(WriterLockHolders.takenOverFrom([Self.flock], record: nil, taker: 7) == [Self.flock])
        // The taker was granted the lock as the record's holder died (killed by the frozen-holder
        // policy): it is never named as the one taken over from; the record's holder stands.
        let taker = LockHolder(pid: 7, kind: .flock, access: .write)
        #expect(WriterLockHolders.takenOverFrom([taker], record: Self.record(pid: 99), taker: 7).isEmpty)
        #expect(
            WriterLockHolders.takenOverFrom([taker, Self.flock], record: Self.record(pid: 99), taker: 7) == [
                Self.flock
            ])
    }

    func observation(_ record: HeartbeatRecord) -> TakeoverWatch.Observation {
        TakeoverWatch.Observation(
            generation: FileIdentity(device: 1, inode: 2), record: record, content: record.line,
            holderState: .running, now: 10)
    }

    @Test("a takeover from a foreign holder names its pid and command, and what the record said, in the log")
    func takeoverAccount() {
        let seen = observation(Self.record(pid: 99, released: 5))
        let takeover = WriterLease.takeover(
            of: seen, epoch: 3, historyName: "host", pid: 99, silentNanos: 2_000_000_000,
            lockHolders: [Self.flock])
        #expect(takeover.name == nil)
        #expect(takeover.pid == 1234)
        #expect(takeover.recorded == .init(name: "host", pid: 99, released: true))
        #expect(takeover.holderDescription == "pid 1234 (flock D/writer.lock sleep 12)")
        let fields = ParticipantEvent.leaseTookOver(epoch: 4, from: takeover).logFields
        #expect(fields["holder"] == "pid 1234 (flock D/writer.lock sleep 12)")
        #expect(fields["holderPid"] == 1234)
        #expect(
            fields["lockHolders"]?.arrayValue?.first?.value(atPath: "command")
                == "flock D/writer.lock sleep 12")
        #expect(fields["record"]?.value(atPath: "holder") == "host")
        #expect(fields["record"]?.value(atPath: "released") == true)

        // The kernel agreeing with the record: the history's name, as before.
        let frozen = WriterLease.takeover(
            of: observation(Self.record(pid: 99)), epoch: 3, historyName: "host", pid: 99,
            silentNanos: 2_000_000_000, lockHolders: [])
        #expect(frozen.name == "host" && frozen.pid == 99 && frozen.lockHolders.isEmpty)
        let frozenFields = ParticipantEvent.leaseTookOver(epoch: 4, from: frozen).logFields
        #expect(frozenFields["holder"] == "host")
        #expect(!frozenFields.keys.contains("lockHolders"))
    }

    @Test("already running: the kernel's holder of the name's lock, with its command when the file disagrees")
    func nameInUse() throws {
        let temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path)
        let baton = LockHolder(pid: 42, kind: .flock, access: .write, command: "baton participant")
        #expect(
            NameClaim.inUse("host", in: directory, recorded: "42\n", holders: [baton])
                == "participant 'host' is already running (pid 42) in \(temp.path); stop it first or choose another --name"
        )
        #expect(
            NameClaim.inUse("host", in: directory, recorded: "42\n", holders: [Self.flock])
                == "participant 'host' is already running (pid 1234 (flock D/writer.lock sleep 12), though its lock file records pid 42) in \(temp.path); stop it first or choose another --name"
        )
        #expect(
            NameClaim.inUse("host", in: directory, recorded: nil, holders: [Self.flock]).contains(
                "though its lock file records no pid"))
        // No word from the kernel: the recorded pid.
        #expect(NameClaim.inUse("host", in: directory, recorded: "42\n", holders: nil).contains("(pid 42)"))
    }
}
