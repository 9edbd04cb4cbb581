import BatonLocking
import BatonStore
import Foundation

extension WriterLease {
    /// What an acquisition holds while ``AcquireMachine`` runs it, and how each of the machine's
    /// actions is carried out: the descriptors, the kernel wait, the changes watched, and what
    /// the last action produced.
    struct AcquireRun {
        let lease: WriterLease
        /// A descriptor found busy, kept to wait on.
        private var kept: FileLock?
        /// A lock just taken (probed free, or granted by the kernel), until begun or released.
        private var inHand: FileLock?
        private var pending: PendingLock?
        private var changes: LeaseChanges?
        /// The changes seen when the round began: a change after it ends the round's sleep.
        private var rings = 0
        private var held: Held?
        /// The error of the action that threw.
        var failure: (any Error)?

        init(lease: WriterLease) {
            self.lease = lease
        }

        /// Carries out `action` (anything but ``AcquireMachine/Action/finish(_:)``) and answers
        /// what came of it.
        mutating func carryOut(
            _ action: AcquireMachine.Action, mayTry: () -> Bool, onBlocked: (Blocked?) -> Void
        ) async throws -> AcquireMachine.Event {
            switch action {
            case .askMayTry:
                return .mayTry(mayTry())
            case .probe(let reuseKept):
                return try probe(reuseKept: reuseKept)
            case .watchChanges:
                changes = lease.watchChanges()
            case .beginRound:
                if Task.isCancelled { return .cancelled }
                rings = changes?.rings ?? 0
                return .mayTry(mayTry())
            case .takeGrant:
                guard let granted = pending?.take() else { return .notGranted }
                pending = nil
                let lock = try granted.get()
                inHand = lock
                return .granted(stillAtPath: lock.isStillAtPath)
            case .lookAtLockFile:
                return .lockFile(FileIdentity.of(lease.directory.writerLockPath))
            case .closeKept:
                kept.take()?.unlock()
            case .startKernelWait:
                if let lock = kept.take() {
                    let changes = changes ?? lease.watchChanges()
                    pending = PendingLock(lock: lock, executor: lease.executor, onGranted: changes.ring)
                }
            case .abandonKernelWait:
                pending.take()?.abandon()
            case .readClock:
                return .clock(MonotonicClock.nanos())
            case .readDeadlineClock:
                return .deadlineClock(ContinuousClock.now)
            case .observeHolder(let generation):
                return .holderObserved(lease.observeHolder(generation: generation))
            case .takeOver(let seen, let silentNanos, let pursued):
                return .takeover(try takeOver(seen, silentNanos: silentNanos, pursued: pursued))
            case .report(let blocked):
                onBlocked(blocked)
            case .unfreeze(let pid, let policy):
                return .unfroze(
                    FrozenHolder.act(
                        policy, on: pid, lockPath: lease.directory.writerLockPath,
                        shmPath: lease.directory.storePath + "-shm"))
            case .begin:
                if let lock = inHand.take() { held = try lease.begin(with: lock) }
                return .began
            case .unlock:
                inHand.take()?.unlock()
            case .sleep(let timeout):
                await changes?.wait(after: rings, timeout: timeout)
                return .woke
            case .finish:
                break
            }
            return .done
        }

        /// Tries the lock without blocking: on the kept descriptor, or on a fresh one.
        private mutating func probe(reuseKept: Bool) throws -> AcquireMachine.Event {
            let reused = reuseKept ? kept.take() : nil
            let lock = try reused ?? FileLock(path: lease.directory.writerLockPath, in: lease.directory)
            guard try lock.tryLock() else {
                kept = lock
                return .probed(.busy(lock.identity))
            }
            inHand = lock
            return .probed(.locked(stillAtPath: lock.isStillAtPath))
        }

        private mutating func takeOver(
            _ seen: TakeoverWatch.Observation, silentNanos: UInt64, pursued: Bool
        ) throws -> AcquireMachine.TakeoverResult {
            switch try lease.takeOver(seen, silentNanos: silentNanos, pursued: pursued) {
            case .taken(let held):
                self.held = held
                return .taken
            case .moved:
                return .moved
            case .blocked(let reason):
                return .blocked(reason)
            }
        }

        /// Returns the holding, or throws what ended the acquisition.
        func end(_ ending: AcquireMachine.Ending) throws -> Held {
            switch ending {
            case .held:
                if let held { return held }
            case .cancelled:
                throw CancellationError()
            case .timedOut:
                throw CoordinatorError(.leaseTimeout, "the writer lease was not free in time")
            case .failed:
                if let failure { throw failure }
            }
            // The machine ends held only once a holding began, and failed only after an action threw.
            preconditionFailure("the acquisition ended \(ending) with nothing to show for it")
        }
    }
}
