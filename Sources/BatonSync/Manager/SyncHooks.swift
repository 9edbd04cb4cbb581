/// Test hooks for a ``SyncManager``, given at its creation (visible inside this package only).
/// Production code never makes one; without one the engine makes no hook call.
package struct SyncHooks: Sendable {
    /// Called before each page of a sync down is saved, with the state the run holds (what
    /// committed so far) and the state it moves to once the page commits. A test can build a
    /// mutant of the engine here (for instance, take `next` on before the commit, the original
    /// data-loss bug) and check that a sweep catches it.
    package var pageWillSave: (@Sendable (_ committed: inout SyncState, _ next: SyncState) -> Void)?

    /// Called before a queued job reads its sync from the store; what it throws is what the read
    /// throws (a store that cannot be read: an I/O error, a store file replaced).
    package var syncWillBeRead: (@Sendable (_ syncId: Int64) throws -> Void)?

    package init(
        pageWillSave: (@Sendable (_ committed: inout SyncState, _ next: SyncState) -> Void)? = nil,
        syncWillBeRead: (@Sendable (_ syncId: Int64) throws -> Void)? = nil
    ) {
        self.pageWillSave = pageWillSave
        self.syncWillBeRead = syncWillBeRead
    }
}
