import BatonStore
import Foundation

/// One wait for the writer lease, off the participant's loop: it holds back while a
/// higher-priority participant waits, and its outcome (`leaseGranted`, `leaseFailed`,
/// `leaseBlocked`) arrives as the participant's input, with this wait's id.
struct LeaseWait: Sendable {
    let id = UUID()
    let task: Task<Void, Never>

    /// Starts waiting for `lease` for the participant `me` of `directory`.
    init(
        lease: WriterLease, for me: ParticipantConfiguration, in directory: SharedDirectory,
        sink: AsyncStream<Participant.Input>.Continuation
    ) {
        let (started, id) = (MonotonicClock.millis(), id)
        task = Task {
            do {
                let held = try await lease.acquire(
                    mayTry: { !Self.higherPriorityIsWaiting(than: me, in: directory) },
                    onBlocked: { sink.yield(.leaseBlocked($0)) })
                sink.yield(.leaseGranted(held, waitMillis: MonotonicClock.millis() - started, wait: id))
            } catch is CancellationError {
                return
            } catch {
                sink.yield(.leaseFailed(String(describing: error), wait: id))
            }
        }
    }

    /// Stops the wait and returns once it has ended.
    func cancel() async {
        task.cancel()
        await task.value
    }

    /// Whether a participant with a higher priority than `me`, alive and foreground, waits for
    /// the lease (its status says so).
    static func higherPriorityIsWaiting(than me: ParticipantConfiguration, in directory: SharedDirectory)
        -> Bool
    {
        ParticipantStatus.readAll(in: directory).contains { other in
            other.name != me.name && other.priority > me.priority && other.isWaiting
                && other.lifecycle == .foreground && other.isAlive
        }
    }
}
