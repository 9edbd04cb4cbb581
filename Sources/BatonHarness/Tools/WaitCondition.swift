import BatonCoordinator
import BatonLocking
import BatonStore
import Foundation

/// What `baton wait` waits for: a state (checked on a fresh ``CoordinatorSnapshot``) or a lease
/// event (checked on the lease's lock file and history, counting from when the wait began).
public enum WaitCondition: Sendable, Equatable {
    /// Participant NAME holds the writer lease.
    case writer(String)
    /// Nobody holds the writer lease.
    case noWriter
    /// Sync NAME has this status.
    case sync(name: String, status: String)
    /// Participant NAME publishes this lifecycle.
    case lifecycle(name: String, state: Lifecycle)
    /// The lease was granted at this epoch or a later one (already, or while waiting).
    case epoch(Int64)
    /// A holding was taken over (its holder frozen, hung or dead, or its lock file replaced):
    /// one from epoch `from` on, or when nil one still held when the wait began or granted
    /// after.
    case takeover(from: Int64?)
    /// A holding was let go cleanly: one from epoch `from` on, or when nil one still held when
    /// the wait began or granted after.
    case release(from: Int64?)

    public func holds(in snapshot: CoordinatorSnapshot) -> Bool {
        switch self {
        case .writer(let name):
            snapshot.writer?.name == name && snapshot.participants.contains { $0.name == name && $0.isWriter }
        case .noWriter:
            snapshot.writer == nil && !snapshot.participants.contains { $0.isWriter && $0.isAlive }
        case .sync(let name, let status):
            snapshot.syncStatuses[name] == status
        case .lifecycle(let name, let state):
            snapshot.participants.contains { $0.name == name && $0.lifecycle == state }
        case .epoch, .takeover, .release:
            false
        }
    }

    /// Whether a lease condition holds in `view`, for a wait that began at `start`.
    func holds(in view: LeaseView, since start: LeaseView) -> Bool {
        switch self {
        case .epoch(let epoch):
            return view.latestEpoch >= epoch
        case .takeover:
            // An interval from the start's epoch on ended taken over, or the current holder took
            // over one of them (its own first write has not recorded that yet).
            return view.intervals.contains { $0.epoch >= start.latestEpoch && $0.releaseKind == "taken-over" }
                || view.record.map { record in
                    record.epoch > start.latestEpoch
                        && (record.takenOver >= max(1, start.latestEpoch)
                            || record.closing.map { $0.kind == .takenOver && $0.epoch >= start.latestEpoch }
                                ?? false)
                } ?? false
        case .release:
            // A release not already made at the start: of the start's holding if it was still
            // held then, else of a later one.
            let releasedBefore = start.latestReleased ? start.latestEpoch : start.latestEpoch - 1
            return view.intervals.contains { $0.epoch > releasedBefore && $0.releaseKind == "released" }
                || view.record.map { record in
                    (record.epoch > releasedBefore && record.released > 0)
                        || record.closing.map { $0.kind == .released && $0.epoch > releasedBefore } ?? false
                } ?? false
        default:
            return false
        }
    }

    /// Waits (on inotify events in D/participants, D/lifecycle, D/changes and, for the lease
    /// conditions, D/writer.lock; never polling) until the condition holds in the shared
    /// directory at `path`; false after `timeout`.
    ///
    /// - Throws: `directoryUnavailable` when there is no shared directory at `path` (a wait
    ///   never creates one: a mistyped path would wait out its timeout for nothing); `busy`,
    ///   naming the holder, when the timeout passed while another process held `D/setup.lock`,
    ///   so the store could not be read.
    public func wait(in path: String, timeout: Duration) async throws -> Bool {
        let shared = try SharedDirectory(path: path, create: false)
        for sub in [shared.lifecyclePath, shared.participantsPath] { try shared.ensureSubdirectory(sub) }
        let deadline = ContinuousClock.now + timeout
        // A check waits for D/setup.lock at most for what is left of the timeout.
        let left: @Sendable () -> Duration = { max(.zero, deadline - ContinuousClock.now) }
        let lease: Bool
        let check: @Sendable () throws -> Bool
        switch self {
        case .epoch, .takeover, .release:
            lease = true
            let start: LeaseView
            switch self {
            case .takeover(let from?), .release(let from?):
                start = LeaseView(latestEpoch: from, latestReleased: false, intervals: [], record: nil)
            default:
                start = try LeaseView.read(shared, from: nil, setupTimeout: left())
            }
            let condition = self
            check = {
                condition.holds(
                    in: try LeaseView.read(shared, from: start.latestEpoch, setupTimeout: left()),
                    since: start)
            }
        default:
            lease = false
            let condition = self
            check = { condition.holds(in: try CoordinatorSnapshot.read(path, setupTimeout: left())) }
        }
        // The last check's failure to open the store because another process held a lock: a
        // wait that times out meanwhile fails with it (it names the holder).
        let blocked = Locked<StoreError?>(nil)
        // In the root only the change doorbell (and, for the lease, its lock file) matters: the
        // store files and setup.lock change when a check opens the store, and must not wake the
        // wait again.
        let met = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["lifecycle", "participants"]
        )
        .wait(
            timeout: timeout,
            relevant: { event in
                guard case .changed(let directory, let name) = event else { return true }
                switch directory {
                case "": return name == "changes" || (lease && name == "writer.lock")
                case "participants": return ParticipantStatus.isStatusFile(name, in: shared)
                default: return true
                }
            },
            until: {
                do {
                    let met = try check()
                    blocked.withLock { $0 = nil }
                    return met
                } catch let error as StoreError where error.code == .busy {
                    blocked.withLock { $0 = error }
                    return false
                } catch {
                    // A directory being set up (no store yet, a participant's file half
                    // made) does not hold the condition; the next change checks again.
                    return false
                }
            })
        if !met, let error = blocked.withLock({ $0 }) { throw error }
        return met
    }
}

/// The lease as its lock file and the store's history show it at one moment.
struct LeaseView: Sendable {
    /// The latest epoch granted (0 before anyone took the lease).
    var latestEpoch: Int64
    /// Whether the latest holding has ended with a release.
    var latestReleased: Bool
    /// The history from the epoch asked for on, with an end only the lock file knows folded in.
    var intervals: [LeaseRecord]
    /// The lock file's record.
    var record: HeartbeatRecord?

    /// Reads the lock file and the history from epoch `from` (only the latest interval when nil).
    /// A store that cannot be read yet (none, or being created) counts as an empty history.
    ///
    /// - Throws: ``StoreError`` `busy` when another process held `D/setup.lock` past
    ///   `setupTimeout` (the message names it).
    static func read(
        _ shared: SharedDirectory, from: Int64?, setupTimeout: Duration = SharedStore.defaultSetupTimeout
    ) throws -> LeaseView {
        let record = HeartbeatRecord.read(at: shared.writerLockPath)
        let store: SharedStore?
        do {
            store = try SharedStore.openForReading(
                directory: shared, setupTimeout: setupTimeout,
                logger: .init(label: "baton.wait"))
        } catch let error as StoreError where error.code == .busy {
            throw error
        } catch {
            // No store yet, or one being created: an empty history (the doc comment above).
            store = nil
        }
        // A history that cannot be read yet (a store just created) is empty, as above.
        let history =
            (try? store?.read { reader -> [LeaseRecord] in
                let latest = max(record?.epoch ?? 0, try reader.leaseEpoch())
                return try reader.leaseHistory(from: from ?? latest)
            }) ?? []
        let intervals = LeaseHistory.fold(history, record: record)
        let latest = max(record?.epoch ?? 0, intervals.last?.epoch ?? 0)
        let released =
            record.map { $0.epoch == latest ? $0.released > 0 : false }
            ?? (intervals.last.map { $0.epoch == latest && $0.released != nil } ?? false)
        return LeaseView(latestEpoch: latest, latestReleased: released, intervals: intervals, record: record)
    }
}
