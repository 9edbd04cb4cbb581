import BatonCoordinator
import BatonJSON
import BatonStore
import Foundation

/// The floor of a lease with the writer lease's guarantees: the bare kernel lock's turn
/// (``KernelLockFloor``) plus, written out plainly, every file operation and store write those
/// guarantees rest on, and nothing else. What a fair lease turn costs beyond it is the lease's
/// own code (its tasks, its waits, its state); what it costs beyond ``KernelLockFloor`` is also
/// the guarantees.
///
/// Per turn, as `WriterLease` does them:
/// - the wait announced on a waiters' board (the lease's own, ``LeaseWaiters``), and left once
///   granted;
/// - a blocking `flock` on a lock file of its own, then an `lstat` that it is still in place;
/// - the last holder's record read and parsed, and the first beat written, with the next epoch;
/// - the first write reading the store's epoch and recording the holding in the lease history in
///   its own transaction; an `lstat` before every commit;
/// - the release record written before the unlock.
///
/// No heartbeat thread, takeover watch, wait timeout or cancellation: a bench worker alone can
/// block its thread in the kernel for as long as it takes.
final class GuardedFloor: @unchecked Sendable {
    // @unchecked: used by the one task of a bench worker, one turn at a time.

    private let lockPath: String
    private let lockFd: Int32
    private let identity: FileIdentity?
    /// The lease's own waiters' board, on a file of the guarded floor's.
    private let board: LeaseWaiters
    private let name: String
    private let pid = getpid()
    /// The slot of the wait announced now.
    private var ticket: LeaseWaiters.Ticket?
    /// The holding's epoch (0 until known: with no record, the first write takes the store's
    /// epoch + 1) and how the interval before it ends, as the last record said.
    private var epoch: Int64 = 0
    private var closing: LeaseClosing?
    private var granted: Int64 = 0
    private var recorded = false

    init(directory: String, name: String) throws {
        self.name = name
        lockPath = directory + "/bench-guarded.lock"
        lockFd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        board = LeaseWaiters(path: directory + "/bench-guarded.waiters")
        guard lockFd >= 0 else {
            throw CLIError(
                message: "cannot open the guarded floor's lock file: \(String(cString: strerror(errno)))")
        }
        var opened = stat()
        identity =
            fstat(lockFd, &opened) == 0
            ? FileIdentity(device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino)) : nil
    }

    deinit {
        close(lockFd)
    }

    /// Announces the wait, blocks until the lock is granted, checks the lock file, reads the last
    /// record, beats with the next epoch and leaves the board.
    func lock() throws {
        announce()
        while flock(lockFd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                leave()
                throw CLIError(message: "flock: \(String(cString: strerror(errno)))")
            }
        }
        guard FileIdentity.of(lockPath) == identity else {
            _ = flock(lockFd, LOCK_UN)
            leave()
            throw CLIError(message: "the guarded floor's lock file was replaced")
        }
        let last = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer in
            let count = pread(lockFd, buffer.baseAddress, buffer.count, 0)
            return count > 0 ? HeartbeatRecord(parsing: UnsafeBufferPointer(rebasing: buffer[..<count])) : nil
        }
        epoch = last.map { $0.epoch + 1 } ?? 0
        closing = last.flatMap { $0.closing(of: $0.epoch) }
        granted = WallClock.nowMillis()
        recorded = false
        if epoch > 0 { overwrite(record(released: 0)) }
        leave()
    }

    /// One write of the turn; the first records the holding, each checks the lock file before
    /// it commits.
    func write(_ unfenced: UnfencedStore, _ row: JSONObject) throws {
        try unfenced.write { transaction in
            if !recorded {
                let current = try transaction.leaseEpoch()
                if epoch == 0 { epoch = current + 1 }
                guard current < epoch else {
                    throw CLIError(message: "the store's epoch \(current) is not below \(epoch)")
                }
                let closes =
                    closing.flatMap { $0.epoch == current ? $0 : nil }
                    ?? LeaseClosing(epoch: current, at: WallClock.nowMillis(), kind: .takenOver)
                try transaction.recordLeaseEpoch(
                    epoch, name: name, pid: pid, acquired: max(granted, closes.at), closing: closes)
            }
            try transaction.upsert(row, into: "writes")
            guard FileIdentity.of(lockPath) == identity else {
                throw CLIError(message: "the guarded floor's lock file was replaced")
            }
        }
        recorded = true
    }

    /// Writes the release record and unlocks.
    func unlock() {
        overwrite(record(released: WallClock.nowMillis()))
        _ = flock(lockFd, LOCK_UN)
    }

    private func record(released: Int64) -> HeartbeatRecord {
        HeartbeatRecord(
            pid: pid, epoch: epoch, beat: MonotonicClock.nanos(), termMillis: 2000, released: released,
            closing: closing)
    }

    private func overwrite(_ record: HeartbeatRecord) {
        _ = record.withBytes { pwrite(lockFd, $0.baseAddress, $0.count, 0) }
    }

    /// Announces the wait on the waiters' board, as the lease does.
    private func announce() {
        ticket = board.enter(priority: 0, since: MonotonicClock.nanos())
    }

    /// Empties the slot and lets it go.
    private func leave() {
        if let ticket { board.leave(ticket) }
        ticket = nil
    }
}
