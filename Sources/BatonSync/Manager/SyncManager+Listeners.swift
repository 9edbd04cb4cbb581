extension SyncManager {
    /// Who hears of every persisted change of a sync (the observer, then ``updates()``'s
    /// subscribers; a job's own listener is its ``JobHandles/onUpdate``), and of every sync set
    /// aside (``setAsideSyncs()``).
    struct Listeners: Sendable {
        var observer: (@Sendable (SyncState) -> Void)?
        let updates = Broadcaster<SyncState>(buffering: 1024)
        let setAsides = Broadcaster<SetAsideSync>(buffering: 256)

        /// Ends every subscription (``run()`` returned).
        func finish() {
            updates.finish()
            setAsides.finish()
        }
    }
}
