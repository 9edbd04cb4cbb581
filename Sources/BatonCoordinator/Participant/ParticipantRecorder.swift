import BatonStore
import BatonSync
import Logging

/// What a participant says of itself: each note of its machine, and each ``ParticipantEvent``,
/// as a line of `D/logs/<name>.jsonl`, an event for ``Participant/events`` where one says the
/// same, and a message for the app's `Logger` where something went wrong.
struct ParticipantRecorder: Sendable {
    let log: ParticipantLog
    let logger: Logger
    let broadcaster: Broadcaster<ParticipantEvent>

    /// Logs (and broadcasts, where a ``ParticipantEvent`` says the same) what the machine noted.
    func record(_ note: ParticipantMachine<WriterLease.Held>.Note) {
        switch note {
        case .lifecycle(let lifecycle):
            record(ParticipantEvent.lifecycle(lifecycle))
        case .lifecycleIgnored(let reason):
            logger.warning("ignoring the lifecycle signal file", metadata: ["baton.reason": "\(reason)"])
            log.log("lifecycle.ignored", ["reason": .string(reason)])
        case .leaseAcquired(let held, let waitMillis):
            if let takeover = held.takeover {
                record(.leaseTookOver(epoch: held.epoch, from: takeover))
                let pid = takeover.pid.map(String.init) ?? "?"
                logger.warning(
                    "took the writer lease over from a holder that stopped renewing it",
                    metadata: [
                        "baton.holder":
                            "\(takeover.name.map { "\($0) (pid \(pid))" } ?? takeover.holderDescription)",
                        "baton.holderState": "\(takeover.holderState.rawValue)",
                    ])
            }
            record(.leaseAcquired(epoch: held.epoch, waitMillis: waitMillis))
        case .leaseFailed(let reason):
            log.log("lease.failed", ["reason": .string(reason)])
            logger.error("could not take the writer lease", metadata: ["baton.reason": "\(reason)"])
        case .leaseLost(let held, let takenOver, let successor):
            logger.error(
                takenOver
                    ? "the writer lease was taken over while this process was not renewing it; stepping down"
                    : "the writer lock file was deleted or replaced; stepping down")
            record(.leaseLost(epoch: held.epoch, takenOver: takenOver, successor: successor))
        case .leaseBlocked(let blocked):
            if let blocked {
                logger.error(
                    "the writer lease cannot be taken over", metadata: ["baton.reason": "\(blocked.message)"])
            }
            record(ParticipantEvent.leaseBlocked(blocked))
        case .storeLost, .storeBack, .storeReopened, .syncRetry, .problem, .manager, .statusFailed,
            .syncsStopped:
            recordStorage(note)
        }
    }

    /// The notes of the store, the syncs, the stop and the status.
    private func recordStorage(_ note: ParticipantMachine<WriterLease.Held>.Note) {
        switch note {
        case .storeLost(let reason):
            logger.error("the store file changed under this process", metadata: ["baton.reason": "\(reason)"])
            log.log("store.lost", ["reason": .string(reason)])
        case .storeBack:
            logger.notice("the store file is back in place")
            log.log("store.back", [:])
        case .storeReopened(let what):
            logger.notice("reopened the store", metadata: ["baton.reason": "\(what)"])
            log.log("store.reopened", ["reason": .string(what)])
        case .syncRetry(let name, let attempt, let delay):
            record(ParticipantEvent.syncRetry(name: name, attempt: attempt, delay: delay))
        case .problem(let text):
            record(ParticipantEvent.problem(text))
        case .manager(let state):
            record(ParticipantEvent.manager(state))
        case .statusFailed(let error):
            log.log("status.failed", ["error": .string(error)])
            logger.error("could not publish the participant's status", metadata: ["baton.error": "\(error)"])
        case .syncsStopped(let began):
            let stopMs = MonotonicClock.millis() - began
            log.log("stopped", ["stopMs": .double((stopMs * 10).rounded() / 10)])
        default:
            preconditionFailure("\(note) is recorded by record(_:)")
        }
    }

    /// Logs and broadcasts `event`. The manager's observer calls it (off the participant's
    /// loop) for each sync state as it persists it, so the log holds them in order with what
    /// follows (a clean resync ghosts logged after its sync).
    func record(_ event: ParticipantEvent) {
        log.log(event.logName, event.logFields)
        broadcaster.send(event)
    }
}
