import BatonStore
import Foundation
import Synchronization

/// Taking the lease over from a holder that stopped renewing it (frozen, hung): a fresh lock
/// file, locked, then one store transaction that checks the epoch, records the next one and
/// renames the file into place.
extension WriterLease {
    /// A lease taken over: from whom, and how it looked.
    public struct Takeover: Sendable, Hashable {
        /// What the lock file's heartbeat record said of its holder.
        public struct Recorded: Sendable, Hashable {
            /// The holder's name in the lease history (nil when it had not recorded its epoch yet).
            public var name: String?
            /// The process id the record gives.
            public var pid: Int32
            /// Whether the record says the holder let go.
            public var released: Bool

            /// Makes the account of a record from its fields.
            public init(name: String?, pid: Int32, released: Bool) {
                self.name = name
                self.pid = pid
                self.released = released
            }
        }

        /// The epoch taken over.
        public var epoch: Int64
        /// The old holder, from the lease history (nil when it had not recorded its epoch yet,
        /// or the lock was held by a process the record does not name: ``lockHolders``).
        public var name: String?
        /// The old holder's process id: the kernel's holder of the lock when the record does not
        /// name it, else from the heartbeat record or the lease history (nil when none said).
        public var pid: Int32?
        /// What the kernel said of the old holder when the takeover was decided. A takeover of a
        /// holder that was `running` is a false one: it was only slow to beat.
        public var holderState: ProcessState
        /// How long the holder had been silent.
        public var silentMillis: Double
        /// The lock's holders as `/proc/locks` listed them, when they were not the holder the
        /// record names (``WriterLockHolders/takenOverFrom(_:record:taker:)``): a process that locked
        /// `D/writer.lock` without being Baton. Empty when the kernel agreed with the record.
        public var lockHolders: [LockHolder]
        /// What the lock file's record said (nil when it had none that parsed).
        public var recorded: Recorded?

        /// Makes the account of a takeover from its fields.
        public init(
            epoch: Int64, name: String?, pid: Int32?, holderState: ProcessState, silentMillis: Double,
            lockHolders: [LockHolder] = [], recorded: Recorded? = nil
        ) {
            self.epoch = epoch
            self.name = name
            self.pid = pid
            self.holderState = holderState
            self.silentMillis = silentMillis
            self.lockHolders = lockHolders
            self.recorded = recorded
        }

        /// The old holder in a sentence's words: its name, else what the kernel says of the
        /// process that held the lock (`pid 1234 (flock D/writer.lock sleep 30)`), else its pid.
        public var holderDescription: String {
            if let name { return name }
            if let first = lockHolders.first { return first.description }
            return pid.map { "pid \($0)" } ?? "an unknown holder"
        }
    }

    /// The lock file's holder could not be taken over because it holds SQLite's write lock.
    public struct Blocked: Sendable, Hashable {
        /// The holder: its name from the lease history, or `pid N` when it is not there.
        public var name: String
        /// The holder's process id (0 when unknown).
        public var pid: Int32
        /// What the kernel says the holder is doing.
        public var holderState: ProcessState
        /// "host (pid 123) is stopped inside a write transaction; resume or kill it".
        public var message: String

        package init(name: String, pid: Int32, holderState: ProcessState, message: String) {
            self.name = name
            self.pid = pid
            self.holderState = holderState
            self.message = message
        }

        /// The block once the frozen-holder policy acted on it: the message says what was done.
        func acted(on done: String, policy: FrozenHolder.Policy, after bound: Duration) -> Blocked {
            var acted = self
            let state = holderState == .stopped ? "stopped" : "frozen"
            acted.message =
                "\(name) (pid \(pid)) was \(state) inside a write transaction past the frozen-holder bound (\(bound)); policy \(policy.rawValue): \(done)"
            return acted
        }
    }

    /// What a waiter sees of the holder now.
    func observeHolder(generation: FileIdentity?) -> TakeoverWatch.Observation {
        let content = FileLock.recorded(at: directory.writerLockPath) ?? ""
        let record = HeartbeatRecord(parsing: content)
        return TakeoverWatch.Observation(
            generation: generation, record: record, content: content,
            holderState: record.map { ProcessState.of($0.pid) } ?? .unknown, now: MonotonicClock.nanos())
    }

    enum TakeoverOutcome {
        case taken(Held)
        /// The lease moved meanwhile (released, or taken by someone else): look again.
        case moved
        case blocked(Blocked)
    }

    /// Takes the lease over from a silent holder: a fresh lock file, locked, then one store
    /// transaction that checks the epoch, records the next one and renames the file into place.
    ///
    /// - Parameter pursued: a takeover decided earlier and held up by the holder's open write
    ///   transaction: the thawed holder may have beaten since (it was silent for a term, and its
    ///   next write fails its fence), but it must still be the same holding, not let go.
    func takeOver(
        _ seen: TakeoverWatch.Observation, silentNanos: UInt64, pursued: Bool
    ) throws -> TakeoverOutcome {
        let (storeEpoch, history) = try store.read { reader in
            (try reader.leaseEpoch(), try reader.openLeaseRecord())
        }
        // The record names the epoch its holder took; one above the store's is a holder that had
        // not written yet (its fence can never record now).
        let heldEpoch = seen.record?.epoch ?? storeEpoch
        let holder = heldEpoch == storeEpoch ? history : nil
        let holderPid = seen.record?.pid ?? holder?.pid
        let holderName = holder?.name ?? holderPid.map { "pid \($0)" } ?? "the holder"
        let suffix = temporaryFiles.wrappingAdd(1, ordering: .relaxed).oldValue
        let fresh = try FileLock(path: directory.path + "/.writer.lock.\(getpid()).\(suffix)", in: directory)
        let target = directory.writerLockPath
        /// Unlocks the fresh file, deleting it unless it was put in place.
        func discard() {
            if fresh.path != target { unlink(fresh.path) }
            fresh.unlock()
        }
        guard try fresh.tryLock() else {
            discard()
            return .moved
        }
        // Who holds the lock file as the kernel says, while it still does: a process that is
        // not the record's holder is named as the one taken over from.
        let lockHolders = WriterLockHolders.takenOverFrom(
            seen.generation.flatMap { LockHolders.current(of: $0) }, record: seen.record, taker: getpid())
        let epoch = max(storeEpoch, heldEpoch) + 1
        // An earlier interval the silent holder never recorded the end of (it took the lease,
        // then froze before its first write) ends as its record says.
        let closing = seen.record?.closing(of: storeEpoch)
        // The fresh file names the epoch it takes over, so the old holder, woken by the rename
        // (which comes before the commit), tells it from a deleted lock file.
        heartbeat.hold(fresh, epoch: epoch, takenOver: heldEpoch)
        do {
            let acquired = try store.takeOverLease(
                from: storeEpoch, epoch: epoch, closing: closing, name: name, pid: getpid(),
                deadline: ContinuousClock.now + takeoverLockWait
            ) {
                guard stillAsSeen(seen, pursued: pursued) else {
                    throw StoreError(.staleEpoch, "the lock file changed meanwhile")
                }
                try fresh.rename(to: target)
            }
            guard let acquired else {
                heartbeat.drop()
                discard()
                return .moved
            }
            let takeover = Self.takeover(
                of: seen, epoch: heldEpoch, historyName: holder?.name, pid: holderPid,
                silentNanos: silentNanos,
                lockHolders: lockHolders)
            let fence = LeaseFence(
                store: store, epoch: epoch, holder: name, pid: getpid(), granted: acquired,
                previous: storeEpoch,
                closing: nil, recorded: true, stillHeld: { fresh.isStillAtPath })
            return .taken(adopt(Held(fence: fence, takeover: takeover), fresh))
        } catch let error as StoreError where error.code == .busy {
            heartbeat.drop()
            discard()
            return .blocked(Self.blocked(name: holder?.name, holderName: holderName, pid: holderPid ?? 0))
        } catch let error as StoreError where error.code == .staleEpoch {
            heartbeat.drop()
            discard()
            return .moved
        } catch {
            heartbeat.drop()
            discard()
            throw error
        }
    }

    /// The account of a takeover of the holding `seen` shows (`epoch`, named `historyName` in
    /// the lease history, `pid` by its record or the history): from the kernel's `lockHolders`
    /// when they are not the record's holder, with what the record said beside them.
    static func takeover(
        of seen: TakeoverWatch.Observation, epoch: Int64, historyName: String?, pid: Int32?,
        silentNanos: UInt64,
        lockHolders: [LockHolder]
    ) -> Takeover {
        let recorded = seen.record.map {
            Takeover.Recorded(name: historyName, pid: $0.pid, released: $0.released > 0)
        }
        let silentMillis = Double(silentNanos / 100_000) / 10
        guard let foreign = lockHolders.first else {
            return Takeover(
                epoch: epoch, name: historyName, pid: pid, holderState: seen.holderState,
                silentMillis: silentMillis, recorded: recorded)
        }
        return Takeover(
            epoch: epoch, name: nil, pid: foreign.knownPid,
            holderState: foreign.knownPid.map { ProcessState.of($0) } ?? .unknown, silentMillis: silentMillis,
            lockHolders: lockHolders, recorded: recorded)
    }

    /// Whether the holder still looks as it did: same file, same record (it neither beat nor let
    /// go since; pursued, the same holding, not let go), so nobody took over or was granted the
    /// lock first.
    private func stillAsSeen(_ seen: TakeoverWatch.Observation, pursued: Bool) -> Bool {
        let target = directory.writerLockPath
        let now = FileLock.recorded(at: target) ?? ""
        let same: Bool
        if pursued, let record = HeartbeatRecord(parsing: now), let before = seen.record {
            same = record.pid == before.pid && record.epoch == before.epoch && record.released == 0
        } else {
            same = now == seen.content
        }
        return FileIdentity.of(target) == seen.generation && same
    }

    /// A takeover held up by `pid` (named `name` in the lease history, `holderName` in messages),
    /// which keeps SQLite's write lock: what the kernel says it is doing, and what to do about it.
    static func blocked(name: String?, holderName: String, pid: Int32) -> Blocked {
        let state = ProcessState.of(pid)
        let message: String
        switch state {
        case .stopped:
            message =
                "\(holderName) (pid \(pid)) is stopped inside a write transaction; resume it (kill -CONT \(pid)) or kill it"
        case .hung:
            message =
                "\(holderName) (pid \(pid)) is hung inside a write transaction (uninterruptible sleep); resume or kill it"
        default:
            message =
                "\(holderName) (pid \(pid)) has not renewed the writer lease for a full term and another process holds the store's write lock; the takeover waits for that lock"
        }
        return Blocked(name: name ?? holderName, pid: pid, holderState: state, message: message)
    }
}
