import BatonStore
import BatonSync

/// What a participant does, as it happens: ``Participant/events`` yields these, typed, and
/// `D/logs/<name>.jsonl` records the same, one JSON line each (``logName`` and ``logFields``).
public enum ParticipantEvent: Sendable, Hashable {
    /// The lifecycle signal changed (from the file, a shell, or ``Participant/enterForeground()``).
    case lifecycle(Lifecycle)
    /// Foreground, it asks for the writer lease.
    case leaseWaiting
    /// It holds the writer lease (`waitMillis` after asking).
    case leaseAcquired(epoch: Int64, waitMillis: Double)
    /// It took the lease over from a holder that stopped renewing it (comes before
    /// ``leaseAcquired(epoch:waitMillis:)``).
    case leaseTookOver(epoch: Int64, from: WriterLease.Takeover)
    /// It let the lease go: for `reason`, or (nil) because the lease arrived when it was no
    /// longer wanted. `releaseMillis` from the stop's request to the release, when it stopped.
    case leaseReleased(epoch: Int64, reason: ReleaseReason?, releaseMillis: Double?)
    /// Another participant took its lease over (`takenOver`), or its lock file went away: it
    /// stops its syncs without writing and steps down. `successor` is the record of the lock
    /// file now in place, if any.
    case leaseLost(epoch: Int64, takenOver: Bool, successor: String?)
    /// A takeover it decided waits for a holder that keeps SQLite's write lock (nil: no longer).
    case leaseBlocked(WriterLease.Blocked?)
    /// Its sync manager's state changed.
    case manager(ManagerStateMachine.State)
    /// A sync's state was persisted (progress, status).
    case sync(SyncState)
    /// A sync it cannot run (its row cannot be read, or holds a type or status this version
    /// does not know) was set aside: `failed`, with `error`, naming it. The others go on.
    case syncSetAside(id: Int64, name: String?, error: String)
    /// A failed configured sync runs again after `delay` (`attempt` failures in a row).
    case syncRetry(name: String, attempt: Int, delay: Duration)
    /// A local edit committed under `epoch`.
    case localWrite(epoch: Int64)
    /// What keeps it from its work now, or nil once nothing does.
    case problem(String?)

    /// The `event` of its log line.
    public var logName: String {
        switch self {
        case .lifecycle: "lifecycle"
        case .leaseWaiting: "lease.waiting"
        case .leaseAcquired: "lease.acquired"
        case .leaseTookOver: "lease.takeover"
        case .leaseReleased: "lease.released"
        case .leaseLost(_, let takenOver, _): takenOver ? "lease.lost" : "lease.lockLost"
        case .leaseBlocked(let blocked): blocked == nil ? "lease.unblocked" : "lease.blocked"
        case .manager: "manager"
        case .sync: "sync"
        case .syncSetAside: "sync.setAside"
        case .syncRetry: "sync.retry"
        case .localWrite: "local.write"
        case .problem(let text): text == nil ? "problem.cleared" : "problem"
        }
    }

    /// The other fields of its log line.
    public var logFields: JSONObject {
        switch self {
        case .lifecycle(let lifecycle):
            return ["state": .string(lifecycle.rawValue)]
        case .leaseWaiting:
            return [:]
        case .leaseAcquired(let epoch, let waitMillis):
            return ["epoch": .int(epoch), "waitMs": .double((waitMillis * 10).rounded() / 10)]
        case .leaseTookOver(let epoch, let from):
            return Self.takeoverFields(epoch: epoch, from)
        case .leaseReleased(let epoch, let reason, let releaseMillis):
            var fields: JSONObject = ["epoch": .int(epoch), "reason": .string(reason?.rawValue ?? "unused")]
            if let releaseMillis { fields["releaseMs"] = .double((releaseMillis * 10).rounded() / 10) }
            return fields
        case .leaseLost(let epoch, _, let successor):
            return ["epoch": .int(epoch), "successor": successor.map(JSONValue.string) ?? .null]
        case .leaseBlocked(let blocked):
            guard let blocked else { return [:] }
            return [
                "holder": .string(blocked.name), "holderPid": .int(Int64(blocked.pid)),
                "holderState": .string(blocked.holderState.rawValue), "problem": .string(blocked.message),
            ]
        case .manager(let state):
            return ["state": .string(state.rawValue)]
        case .sync(let state):
            return [
                "id": .int(state.id), "name": state.name.map(JSONValue.string) ?? .null,
                "status": .string(state.status.rawValue),
                "progress": .int(Int64(state.progress)), "totalSize": .int(Int64(state.totalSize)),
                "maxTimeStamp": .int(state.maxTimeStamp),
            ]
        case .syncSetAside(let id, let name, let error):
            return ["id": .int(id), "name": name.map(JSONValue.string) ?? .null, "error": .string(error)]
        case .syncRetry(let name, let attempt, let delay):
            return [
                "name": .string(name), "attempt": .int(Int64(attempt)),
                "delayMs": .double(delay.inMilliseconds),
            ]
        case .localWrite(let epoch):
            return ["epoch": .int(epoch)]
        case .problem(let text):
            return text.map { ["problem": .string($0)] } ?? [:]
        }
    }
}

extension ParticipantEvent {
    /// A takeover's log fields: the holder taken over from (`holder` is its name, or, for a
    /// process the lock file's record does not name, `pid N (COMMAND)` with `lockHolders` as
    /// `/proc/locks` listed them), and what the record said of its own holder (`record`).
    static func takeoverFields(epoch: Int64, _ from: WriterLease.Takeover) -> JSONObject {
        var fields: JSONObject = [
            "epoch": .int(epoch), "from": .int(from.epoch),
            "holder": from.name == nil && from.lockHolders.isEmpty ? .null : .string(from.holderDescription),
            "holderPid": from.pid.map { .int(Int64($0)) } ?? .null,
            "holderState": .string(from.holderState.rawValue), "silentMs": .double(from.silentMillis),
        ]
        if !from.lockHolders.isEmpty {
            fields["lockHolders"] = .array(
                from.lockHolders.map { holder in
                    var object: JSONObject = [
                        "pid": .int(Int64(holder.pid)), "kind": .string(holder.kind.rawValue),
                        "access": .string(holder.access.rawValue),
                    ]
                    if let command = holder.command { object["command"] = .string(command) }
                    return .object(object)
                })
        }
        if let recorded = from.recorded {
            fields["record"] = .object([
                "holder": recorded.name.map(JSONValue.string) ?? .null, "pid": .int(Int64(recorded.pid)),
                "released": .bool(recorded.released),
            ])
        }
        return fields
    }
}
