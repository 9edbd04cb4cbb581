import BatonStore

extension SyncManager {
    /// Every sync set aside from now on (a `SyncState` cannot be built from its row, so
    /// ``updates()`` cannot tell of it): a participant retries a configured one, whose repaired
    /// row then runs.
    public func setAsideSyncs() -> AsyncStream<SetAsideSync> {
        setAsides.subscribe()
    }

    /// The state of a queued job's sync, to run it (or to mark it stopped); nil when there is
    /// nothing to run. A sync that cannot be read is never dropped silently: it is set aside,
    /// `failed` with the cause, so that it is not left `running` with nothing running it.
    func readForRun(_ job: Job) async -> SyncState? {
        let stored: StoredSync?
        do {
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
        if !unchanged {
            do {
                try await writeSetAside(id, error: cause.message, through: writer())
                unpersistedSetAsides[id] = nil
            } catch {
                logger.error(
                    "could not mark a set-aside sync failed; will try again",
                    metadata: ["baton.sync": "\(id)", "baton.error": "\(error)"])
                unpersistedSetAsides[id] = cause.message
                startFlushingFinals()
            }
        }
        setAsides.send(SetAsideSync(id: id, name: name, error: cause))
    }

    /// Writes a set-aside sync's `failed` in a task of its own, as ``writeUncancelled(_:through:)``.
    func writeSetAside(_ id: Int64, error: String, through access: WriteAccess) async throws {
        let ended = WallClock.nowMillis()
        let failed = SyncStatus.failed.rawValue
        _ = try await Task.detached {
            try await access.write {
                try $0.setSyncStatus(id: id, status: failed, error: error, endTime: ended)
            }
        }.value
    }
}
