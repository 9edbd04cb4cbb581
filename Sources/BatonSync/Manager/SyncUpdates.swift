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

/// Thrown at a check when a stop (or a listener's cancel) was requested.
package struct SyncInterrupted: Error {
    package init() {}
}
