import BatonLocking
import BatonStore
import Dispatch

/// Writes a participant's status file off its event loop, newest first.
///
/// Replacing a file (temporary sibling, then `rename`) takes the file system half a millisecond
/// or more on ext4: the rename frees the old file's blocks and first writes out the new one's.
/// A stop publishes its status three times on the way to releasing the lease, so the loop hands
/// each status here and goes on. Statuses are snapshots: while one is being written, only the
/// newest one handed in waits, and an older one still waiting is dropped for it.
///
/// ``flush()`` waits until everything handed in is written (or failed): the participant calls
/// it where another process must read the status first (before it waits for the lease, so a
/// lower-priority waiter sees it waiting) and before it leaves.
final class StatusPublisher: Sendable {
    /// The write: ``ParticipantStatus/publish(in:)`` into the directory, replaceable in tests.
    typealias Write = @Sendable (ParticipantStatus) throws -> Void

    private let write: Write
    /// Told how each write went: nil when it succeeded, else the error.
    private let outcome: @Sendable (String?) -> Void
    private let queue = DispatchQueue(label: "baton.status")
    /// The newest status not yet taken by a write, and whether a write is queued to take it.
    private let pending = Locked<(status: ParticipantStatus?, queued: Bool)>((nil, false))

    init(write: @escaping Write, outcome: @escaping @Sendable (String?) -> Void) {
        self.write = write
        self.outcome = outcome
    }

    convenience init(directory: SharedDirectory, outcome: @escaping @Sendable (String?) -> Void) {
        self.init(write: { try $0.publish(in: directory) }, outcome: outcome)
    }

    /// Hands `status` over to be written; returns at once.
    func submit(_ status: ParticipantStatus) {
        let schedule = pending.withLock { pending -> Bool in
            pending.status = status
            defer { pending.queued = true }
            return !pending.queued
        }
        if schedule { queue.async { self.drain() } }
    }

    /// Returns once every status handed in before the call is written, or its write failed.
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // The queue is serial: the write of a status submitted before this call was queued
            // before it.
            queue.async { continuation.resume() }
        }
    }

    private func drain() {
        while let status = pending.withLock({ pending -> ParticipantStatus? in
            defer { pending.status = nil }
            if pending.status == nil { pending.queued = false }
            return pending.status
        }) {
            do {
                try write(status)
                outcome(nil)
            } catch {
                outcome(String(describing: error))
            }
        }
    }
}
