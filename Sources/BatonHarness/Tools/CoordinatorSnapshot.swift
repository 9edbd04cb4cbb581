import BatonCoordinator
import BatonStore
import BatonSync
import Foundation

extension ProcessState {
    /// How `baton status` shows it.
    var label: String {
        switch self {
        case .stopped: "stopped (frozen)"
        case .hung: "hung (D state)"
        default: rawValue
        }
    }
}

/// What `status` and `wait` look at: the open lease interval, the participants' files and the
/// sync counts.
public struct CoordinatorSnapshot {
    public struct Writer: Sendable {
        public var name: String
        public var pid: Int32
        public var epoch: Int64
    }

    public var writer: Writer?
    public var participants: [ParticipantStatus]
    /// The writer lock file's heartbeat record, and how old it was when read (ms).
    var heartbeat: HeartbeatRecord?
    var heartbeatAgeMillis: Double?
    var syncCounts: [String: Int]
    public var syncStatuses: [String: String]
    /// The syncs this version cannot read (set aside by the writer when it meets them).
    public var unreadableSyncs: [UnreadableSync]
    /// The shared directory's path, as given.
    var directory: String
    /// The processes that hold `D/writer.lock` without being a participant or the lease holder
    /// its record names (``WriterLockHolders/foreign(_:record:participantPids:)``).
    public var foreignWriterLockHolders: [LockHolder] = []

    /// Reads the directory at `path`: its participants' files, the writer lock file (and who
    /// holds it, from `/proc/locks`) and, when there is a store, the lease history and the syncs.
    ///
    /// - Parameter setupTimeout: how long to wait for `D/setup.lock` to open the store.
    /// - Throws: ``StoreError`` `busy` when another process held `D/setup.lock` (or the store's
    ///   write lock while it was opened) past the wait: the message names it.
    public static func read(_ path: String, setupTimeout: Duration = SharedStore.defaultSetupTimeout) throws
        -> CoordinatorSnapshot
    {
        let shared = try SharedDirectory(path: path, create: false)
        var snapshot = try readFiles(shared, path: path, setupTimeout: setupTimeout)
        let holders = FileIdentity.of(shared.writerLockPath).flatMap { LockHolders.current(of: $0) } ?? []
        snapshot.foreignWriterLockHolders = WriterLockHolders.foreign(
            holders, record: snapshot.heartbeat,
            participantPids: Set(snapshot.participants.filter(\.isAlive).map(\.pid)))
        return snapshot
    }

    /// The snapshot of the participants' files, the lock file's record and the store.
    private static func readFiles(_ shared: SharedDirectory, path: String, setupTimeout: Duration) throws
        -> CoordinatorSnapshot
    {
        let participants = ParticipantStatus.readAll(in: shared)
        let heartbeat = HeartbeatRecord.read(at: shared.writerLockPath)
        let now = MonotonicClock.nanos()
        let age = heartbeat.map { now >= $0.beat ? Double((now - $0.beat) / 100_000) / 10 : 0 }
        let store: SharedStore
        do {
            store = try SharedStore.openForReading(
                directory: shared, setupTimeout: setupTimeout,
                logger: .init(label: "baton.status"))
        } catch let error as StoreError where error.code == .busy {
            throw error
        } catch {
            // No store yet (or none that opens): the participants' files and the lock file say
            // what there is to say.
            return CoordinatorSnapshot(
                writer: nil, participants: participants, heartbeat: heartbeat, heartbeatAgeMillis: age,
                syncCounts: [:], syncStatuses: [:], unreadableSyncs: [], directory: path)
        }
        return try store.read { reader in
            // The lock file names the holder (one that has not written yet is not in the store's
            // history); it is the writer while its process lives, has not let go, and does not
            // say it has (a holder that died keeps its record until the next one).
            let history = LeaseHistory.fold(try reader.leaseHistory(), record: heartbeat)
            let writer = heartbeat.flatMap { record -> Writer? in
                guard record.released == 0 else { return nil }
                let alive = kill(record.pid, 0) == 0 || errno == EPERM
                let status = participants.first { $0.pid == record.pid }
                let letGo =
                    status.map { !$0.isWriter && $0.phase != .releasing }
                    ?? false
                let name =
                    history.last { $0.epoch == record.epoch }?.name ?? status?.name ?? "pid \(record.pid)"
                return alive && !letGo ? Writer(name: name, pid: record.pid, epoch: record.epoch) : nil
            }
            // Every sync, one this version cannot read included (by its stored status).
            var statuses: [String: String] = [:]
            var unreadable: [UnreadableSync] = []
            for stored in try StoredSync.all(in: reader) {
                switch stored {
                case .readable(let state):
                    if let name = state.name { statuses[name] = state.status.rawValue }
                case .unreadable(let sync):
                    if let name = sync.name { statuses[name] = sync.status }
                    unreadable.append(sync)
                }
            }
            return CoordinatorSnapshot(
                writer: writer, participants: participants, heartbeat: heartbeat, heartbeatAgeMillis: age,
                syncCounts: try reader.syncStatusCounts(), syncStatuses: statuses,
                unreadableSyncs: unreadable,
                directory: path)
        }
    }

    /// The heartbeat age of the process holding the writer lock file, when `pid` is that one.
    func heartbeatAge(of pid: Int32) -> Double? {
        guard let heartbeat, heartbeat.pid == pid else { return nil }
        return heartbeatAgeMillis
    }

    /// Running, stopped (frozen), hung or dead, as the kernel says.
    func liveness(of participant: ParticipantStatus) -> ProcessState {
        participant.isAlive ? ProcessState.of(participant.pid) : .dead
    }

    func liveness(ofPid pid: Int32) -> ProcessState {
        ProcessState.of(pid)
    }

}

extension CoordinatorSnapshot: Encodable {
    /// What `baton status --json` prints.
    public func encode(to encoder: any Encoder) throws {
        try Report(self).encode(to: encoder)
    }

    /// The JSON form of a snapshot: each participant's status with its liveness as the kernel
    /// says, the writer, the term and the sync counts.
    struct Report: Encodable {
        struct Participant: Encodable {
            var status: ParticipantStatus
            var alive: Bool
            var liveness: ProcessState
            var heartbeatAgeMs: Double?

            enum Keys: String, CodingKey { case alive, liveness, heartbeatAgeMs, writer }

            /// The status's own fields, with the liveness beside them in the same object.
            func encode(to encoder: any Encoder) throws {
                try status.encode(to: encoder)
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(alive, forKey: .alive)
                try container.encode(liveness, forKey: .liveness)
                try container.encode(status.isWriter, forKey: .writer)
                try container.encodeIfPresent(heartbeatAgeMs, forKey: .heartbeatAgeMs)
            }
        }
        struct Writer: Encodable {
            var name: String
            var pid: Int32
            var epoch: Int64
            var liveness: ProcessState
            var heartbeatAgeMs: Double?
        }
        var writer: Writer?
        var leaseTermMs: Int64?
        var participants: [Participant]
        var syncs: [String: Int]
        var unreadableSyncs: [UnreadableSync]
        var foreignWriterLockHolders: [ForeignHolder]

        /// A process that holds `D/writer.lock` without being a participant.
        struct ForeignHolder: Encodable {
            var pid: Int32
            var kind: String
            var access: String
            var command: String?
            var problem: String
        }

        init(_ snapshot: CoordinatorSnapshot) {
            writer = snapshot.writer.map {
                Writer(
                    name: $0.name, pid: $0.pid, epoch: $0.epoch, liveness: snapshot.liveness(ofPid: $0.pid),
                    heartbeatAgeMs: snapshot.heartbeatAge(of: $0.pid))
            }
            leaseTermMs = snapshot.heartbeat?.termMillis
            participants = snapshot.participants.map {
                Participant(
                    status: $0, alive: $0.isAlive, liveness: snapshot.liveness(of: $0),
                    heartbeatAgeMs: snapshot.heartbeatAge(of: $0.pid))
            }
            syncs = snapshot.syncCounts
            unreadableSyncs = snapshot.unreadableSyncs
            foreignWriterLockHolders = snapshot.foreignWriterLockHolders.map {
                ForeignHolder(
                    pid: $0.pid, kind: $0.kind.rawValue, access: $0.access.rawValue, command: $0.command,
                    problem: snapshot.foreignHolderProblem($0))
            }
        }

        /// The writer is `null` when there is none (not left out), so a script can test it.
        enum CodingKeys: String, CodingKey {
            case writer, leaseTermMs, participants, syncs, unreadableSyncs, foreignWriterLockHolders
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(writer, forKey: .writer)
            try container.encodeIfPresent(leaseTermMs, forKey: .leaseTermMs)
            try container.encode(participants, forKey: .participants)
            try container.encode(syncs, forKey: .syncs)
            if !unreadableSyncs.isEmpty { try container.encode(unreadableSyncs, forKey: .unreadableSyncs) }
            if !foreignWriterLockHolders.isEmpty {
                try container.encode(foreignWriterLockHolders, forKey: .foreignWriterLockHolders)
            }
        }
    }
}

extension SyncRetry {
    /// "accounts: attempt 3 failed (cannot reach …); next at 12:00:04 (in 2.0s)".
    var summary: String {
        let wait = max(0, Double(nextAttempt - WallClock.nowMillis()))
        let time = Date(timeIntervalSince1970: Double(nextAttempt) / 1000)
        return
            "\(name): attempt \(attempt) failed (\(lastError)); next at \(Self.clock.string(from: time)) (in \(CoordinatorSnapshot.seconds(wait)))"
    }

    static let clock: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter
    }()
}

extension CoordinatorSnapshot {
    /// What `baton status` prints.
    public var lines: [String] {
        let snapshot = self
        var lines: [String] = []
        if let writer = snapshot.writer {
            var line = "writer: \(writer.name) (pid \(writer.pid), epoch \(writer.epoch))"
            if let age = snapshot.heartbeatAge(of: writer.pid) {
                line += ", heartbeat \(CoordinatorSnapshot.seconds(age)) ago"
            }
            if snapshot.liveness(ofPid: writer.pid) == .stopped {
                line += "; STOPPED: a waiting participant takes the lease over once the term passes"
            }
            lines.append(line)
        } else {
            lines.append("writer: none")
        }
        let rows = snapshot.participants.map { p in
            [
                p.name, p.role.rawValue, String(p.priority), String(p.pid), snapshot.liveness(of: p).label,
                snapshot.heartbeatAge(of: p.pid).map(CoordinatorSnapshot.seconds) ?? "-",
                p.lifecycle.rawValue,
                p.phase.rawValue,
                p.managerState,
            ]
        }
        if rows.isEmpty {
            lines.append("participants: none")
        } else {
            lines += Table.render(
                header: [
                    "NAME", "ROLE", "PRIORITY", "PID", "LIVENESS", "HEARTBEAT", "LIFECYCLE", "PHASE",
                    "MANAGER",
                ],
                rows: rows)
        }
        for holder in snapshot.foreignWriterLockHolders {
            lines.append("problem: \(snapshot.foreignHolderProblem(holder))")
        }
        for p in snapshot.participants {
            if let problem = p.problem { lines.append("problem: \(p.name): \(problem)") }
            for retry in p.retrying { lines.append("retrying: \(p.name): \(retry.summary)") }
            if let refused = p.refusedSignal {
                lines.append("refused signal: \(p.name): \(refusedSummary(refused, of: p))")
            }
        }
        if let term = snapshot.heartbeat.map({ Double($0.termMillis) / 1000 }) {
            lines.append("lease term: \(term)s (the writer renews its heartbeat every quarter term)")
        }
        let counts = snapshot.syncCounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        lines.append("syncs: \(counts.isEmpty ? "none" : counts.joined(separator: " "))")
        for sync in snapshot.unreadableSyncs {
            lines.append(
                "unreadable sync: \(UnreadableSyncRow.label(id: sync.id, name: sync.name)), \(sync.status): \(sync.problem)"
            )
        }
        return lines
    }

    /// "D/lifecycle/ext is empty (at 12:00:03); ext stays background until the file holds
    /// foreground or background".
    func refusedSummary(_ refused: RefusedSignal, of participant: ParticipantStatus) -> String {
        let time = SyncRetry.clock.string(from: Date(timeIntervalSince1970: Double(refused.at) / 1000))
        let file = (directory.hasSuffix("/") ? directory : directory + "/") + "lifecycle/\(participant.name)"
        return
            "\(file) \(refused.reason) (at \(time)); \(participant.name) stays \(participant.lifecycle.rawValue) until the file holds foreground or background"
    }

    /// "D/writer.lock is held by pid 1234 (flock D/writer.lock sleep 30), which is not a Baton
    /// participant; …".
    func foreignHolderProblem(_ holder: LockHolder) -> String {
        let file = (directory.hasSuffix("/") ? directory : directory + "/") + "writer.lock"
        return
            "\(file) is held by \(holder.description), which is not a Baton participant: no participant can take the lease while it holds the lock (a waiting one takes it over once a lease term passes without a heartbeat)"
    }

    static func seconds(_ millis: Double) -> String {
        String(format: "%.1fs", millis / 1000)
    }
}
