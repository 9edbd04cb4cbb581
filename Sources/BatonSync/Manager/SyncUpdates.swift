import Foundation
import Synchronization

/// What a listener wants after hearing of a sync's update.
public enum SyncUpdateAction: Sendable, Hashable {
    /// Carry on.
    case proceed
    /// Stop this one sync at its next check; it becomes `stopped` and can be resumed (SUP's
    /// `SYNC_STATUS_CANCEL`). Other syncs and the manager are unaffected.
    case cancel
}

/// Hears every status and progress change of one sync, after it is persisted.
public typealias SyncUpdateBlock = @Sendable (SyncState) -> SyncUpdateAction

/// Fans sync updates out to any number of `AsyncStream` subscribers.
final class UpdateBroadcaster: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<SyncState>.Continuation]>([:])

    func subscribe() -> AsyncStream<SyncState> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: SyncState.self, bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ state: SyncState) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(state) }
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}

/// Thrown at a check when a stop (or a listener's cancel) was requested.
struct SyncInterrupted: Error {}
