import BatonStore
import BatonSync
import Foundation
import Logging

/// What a participant reads of the shared directory and its store, as its machine's events:
/// the lifecycle signal, the store's files, the lock file, the other participants' statuses. It
/// reports facts; the machine decides what they call for.
struct DirectoryReader: Sendable {
    typealias Event = ParticipantMachine<WriterLease.Held>.Event

    let configuration: ParticipantConfiguration
    let directory: SharedDirectory
    let store: SharedStore
    let log: ParticipantLog
    let logger: Logger
    /// `D/participants/<name>.lock`, held for the process's lifetime: one live process per name.
    var name: NameClaim

    /// A change in the shared directory: what it may have changed, read again
    /// (level-triggered).
    mutating func changed(_ change: DirectoryWatcher.Event) -> [Event] {
        var events: [Event] = []
        switch change {
        case .rescan(let reason):
            if reason != "start" {
                logger.warning("rescanning the shared directory", metadata: ["baton.reason": "\(reason)"])
                log.log("rescan", ["reason": .string(reason)])
            }
            // At the start too: `participants/` may have been replaced after the name was claimed
            // and the status published, but before the watch began (no event says so then).
            let reclaimed = name.reclaim(log: log, logger: logger)
            if reason != "start" || reclaimed { events.append(.publishRequested) }
        case .changed("lifecycle", let file) where file == configuration.name:
            break
        case .changed("participants", let file) where ParticipantStatus.isStatusFile(file, in: directory):
            // Junk there costs one stat, never a read of the directory.
            break
        case .changed("", "writer.lock"):
            return [.lockFileChanged]
        case .changed("", let file) where file.hasPrefix("store.sqlite"):
            return [.storeChecked(store.fileProblem())]
        case .changed:
            return []
        }
        let at = WallClock.nowMillis()
        switch LifecycleSignal.read(directory: directory, name: configuration.name) {
        case .valid(let lifecycle): events.append(.lifecycle(lifecycle))
        case .invalid(let reason): events.append(.lifecycleIgnored(reason, at: at))
        case .empty: events.append(.lifecycleIgnored("is empty", at: at))
        case .missing: events.append(.lifecycleMissing)
        }
        return events + [.directoryRead(storeProblem: store.fileProblem())]
    }

    /// Whether a participant with a higher priority, alive and foreground, waits for the lease.
    func higherPriorityIsWaiting() -> [Event] {
        LeaseWait.higherPriorityIsWaiting(than: configuration, in: directory) ? [.higherPriorityWaiting] : []
    }

    /// Whether `D/writer.lock` is still the file `held` locked: when it was deleted or replaced,
    /// another participant took the lease over (this one had stopped renewing it: frozen,
    /// hung), or somebody deleted the file and another process can lock the new one.
    func checkLockFile(_ held: WriterLease.Held, of lease: WriterLease) -> [Event] {
        guard !lease.holdsLockFile else { return [] }
        // Taken over: the file now in place says it took this epoch over (a taker renames its
        // file in before its transaction commits, so the store may not say so yet).
        let successor = HeartbeatRecord.read(at: directory.writerLockPath)
        return [
            .leaseLost(
                takenOver: successor?.takenOver == held.epoch,
                successor: successor.map { $0.line.trimmingCharacters(in: .whitespacesAndNewlines) })
        ]
    }

    /// The store's files back as opened, or a store at the path reopened, or why not yet.
    func checkStore() -> Event {
        do {
            switch try store.reopen() {
            case .unchanged: return .storeBack
            case .reopened(let problem): return .storeReopened(problem.description)
            }
        } catch let error as StoreError {
            return .storeReopenFailed(error.message)
        } catch {
            return .storeReopenFailed(String(describing: error))
        }
    }

    /// A configured sync failed: with what the store file check says right now (a sync that
    /// failed because the store went away is not retried).
    func syncFailed(_ name: String, error: String?) -> Event {
        .syncFailed(name: name, error: error, storeProblem: store.fileProblem(), at: WallClock.nowMillis())
    }

    /// What the manager's refusals say while this participant is not the writer: who is, when
    /// one is known.
    func notWriterHint() -> String {
        "participant '\(configuration.name)' does not hold the writer lease\(writerHint())"
    }

    /// `; the writer is 'NAME' (pid PID)`, or nothing when no live writer is known.
    func writerHint() -> String {
        guard
            let writer = ParticipantStatus.readAll(in: directory).first(where: { $0.isWriter && $0.isAlive })
        else { return "" }
        return "; the writer is '\(writer.name)' (pid \(writer.pid))"
    }

    /// The status `machine`'s state says, for the status file.
    func status(of machine: ParticipantMachine<WriterLease.Held>) -> ParticipantStatus {
        ParticipantStatus(
            role: configuration.role, name: configuration.name, priority: configuration.priority,
            pid: getpid(), lifecycle: machine.desired, phase: machine.phase.name,
            epoch: machine.phase.lease?.epoch,
            managerState: machine.managerState?.rawValue ?? "stopped", updated: WallClock.nowMillis(),
            problem: machine.problem?.description, retrying: machine.retrying,
            refusedSignal: machine.refusedSignal)
    }
}
