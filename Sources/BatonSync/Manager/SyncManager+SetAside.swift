import BatonStore

extension SyncManager {
    /// The state of a queued job's sync, to run it (or to mark it stopped); nil when there is
    /// nothing to run. A sync that cannot be read is never dropped silently: it is set aside,
    /// `failed` with the cause, so that it is not left `running` with nothing running it.
    func readForRun(_ job: Job) async -> SyncState? {
        let stored: StoredSync?
        do {
            try hooks?.syncWillBeRead?(job.syncId)
            stored = try StoredSync.byId(job.syncId, store: store)
        } catch {
            // The store could not be read (an I/O error, a store file replaced). Its next reSync
            // (a participant's retry) reads it again.
            let label = UnreadableSyncRow.label(id: job.syncId, name: job.name)
            await setAside(
                id: job.syncId, name: job.name,
                cause: SyncError(
                    .unreadableSync,
                    "sync \(label) could not be read from the store (\(error)); it did not run"),
                unchanged: false)
            return nil
        }
        switch stored {
        case .readable(let state):
            return state
        case .unreadable(let sync):
            await setAside(sync)
            return nil
        case nil:
            logger.warning(
                "a queued sync was deleted before it ran; nothing to run",
                metadata: ["baton.sync": "\(job.syncId)"])
            return nil
        }
    }

    /// Sets aside a stored sync this version cannot read: `failed`, with its cause.
    func setAside(_ sync: UnreadableSync) async {
        let cause = sync.cause
        await setAside(
            id: sync.id, name: sync.name, cause: cause,
            unchanged: sync.status == SyncStatus.failed.rawValue && sync.error == cause.message)
    }

    /// Marks the sync `failed` with `cause` as its error, by a write of its status, error and
    /// end time only (its row cannot be written back whole), fenced like every write; logs it
    /// and reports it on ``setAsideSyncs()``. Nothing is written when the row says so already
    /// (`unchanged`). A write that fails is tried again, as a final state is, until it lands,
    /// the sync is submitted again, or the lease moves on (the next writer meets the sync again).
    func setAside(id: Int64, name: String?, cause: SyncError, unchanged: Bool) async {
        logger.warning(
            "set aside a sync that cannot run; the others go on",
            metadata: ["baton.sync": "\(id)", "baton.error": "\(cause.message)"])
        let sync = SetAsideSync(id: id, name: name, error: cause)
        if unchanged {
            listeners.setAsides.send(sync)
        } else {
            await changeStatus(.setAside(sync), onUpdate: nil)
        }
    }
}
