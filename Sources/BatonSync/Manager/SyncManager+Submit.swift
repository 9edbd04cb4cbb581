import BatonStore

extension SyncManager {
    /// Creates a sync down and submits it: returns its state, `running`, at once.
    ///
    /// The soup is registered (with an index on the target's id field) if it is missing.
    ///
    /// - Throws: `notAcceptingSyncs` while stopping/stopped; `StoreError.duplicateSyncName` when
    ///   the name is taken.
    @discardableResult
    public func syncDown(
        target: any SyncDownTarget, options: SyncOptions = SyncOptions(), soupName: String,
        name: String? = nil,
        onUpdate: SyncUpdateBlock? = nil
    ) async throws -> SyncState {
        try requireAccepting("syncDown")
        let created = try await createSync(
            type: .syncDown, targetJSON: target.json, idField: target.idFieldName, options: options,
            soupName: soupName,
            name: name, children: target.childrenSoup)
        return try await submit(created, onUpdate: onUpdate)
    }

    /// Creates a sync up and submits it: returns its state, `running`, at once.
    @discardableResult
    public func syncUp(
        target: any SyncUpTarget, options: SyncOptions = SyncOptions(), soupName: String, name: String? = nil,
        onUpdate: SyncUpdateBlock? = nil
    ) async throws -> SyncState {
        try requireAccepting("syncUp")
        let created = try await createSync(
            type: .syncUp, targetJSON: target.json, idField: target.idFieldName, options: options,
            soupName: soupName,
            name: name)
        return try await submit(created, onUpdate: onUpdate)
    }

    /// Creates a sync down without running it (status `new`); the first ``reSync(id:onUpdate:)`` runs it.
    @discardableResult
    public func createSyncDown(
        target: any SyncDownTarget, options: SyncOptions = SyncOptions(), soupName: String,
        name: String? = nil
    ) async throws -> SyncState {
        try await createSync(
            type: .syncDown, targetJSON: target.json, idField: target.idFieldName, options: options,
            soupName: soupName,
            name: name, children: target.childrenSoup)
    }

    /// Creates a sync up without running it (status `new`).
    @discardableResult
    public func createSyncUp(
        target: any SyncUpTarget, options: SyncOptions = SyncOptions(), soupName: String, name: String? = nil
    ) async throws -> SyncState {
        try await createSync(
            type: .syncUp, targetJSON: target.json, idField: target.idFieldName, options: options,
            soupName: soupName,
            name: name)
    }

    /// Runs a sync again: after `done` a sync down fetches what changed since its last run (its
    /// ``SyncDownPosition``, which also fetches again what a late commit could have hidden);
    /// after `stopped` (or `failed`) it resumes its run after the last record saved. A `new` sync
    /// runs from the start.
    ///
    /// A sync this version cannot read is set aside (`failed`, with why; ``setAsideSyncs()``)
    /// and its cause thrown; once its row is repaired, the next reSync runs it.
    ///
    /// - Throws: `alreadyRunning` for a running sync, `unknownSync`, `notAcceptingSyncs`,
    ///   `unreadableSync`.
    @discardableResult
    public func reSync(id: Int64, onUpdate: SyncUpdateBlock? = nil) async throws -> SyncState {
        try requireAccepting("reSync")
        let state = try await runnable(StoredSync.byId(id, store: store), missing: "no sync with id \(id)")
        return try await submit(state, onUpdate: onUpdate)
    }

    /// ``reSync(id:onUpdate:)`` by name.
    @discardableResult
    public func reSync(name: String, onUpdate: SyncUpdateBlock? = nil) async throws -> SyncState {
        try requireAccepting("reSync")
        let state = try await runnable(
            StoredSync.byName(name, store: store), missing: "no sync named '\(name)'")
        return try await submit(state, onUpdate: onUpdate)
    }

    /// The state of a stored sync to run again.
    ///
    /// - Throws: `unknownSync` (`missing`) when there is none; `alreadyRunning` for one queued or
    ///   running (an unreadable one is set aside when its job reaches it); otherwise, for one
    ///   this version cannot read, its cause, once it is set aside.
    func runnable(_ stored: StoredSync?, missing: String) async throws -> SyncState {
        switch stored {
        case .readable(let state):
            return state
        case .unreadable(let sync):
            guard !machine.isRunActive(sync.id) else {
                throw SyncError(.alreadyRunning, "sync \(sync.name ?? String(sync.id)) is already running")
            }
            await setAside(sync)
            throw sync.cause
        case nil:
            throw SyncError(.unknownSync, missing)
        }
    }

    /// Deletes the local records of a sync down that its query no longer matches on the server
    /// (ghosts), sparing locally modified ones. Queued behind running syncs; returns the number
    /// deleted.
    ///
    /// With `incremental`, a clean after the sync's first asks the server only for what was
    /// deleted since the last one (``GhostCleaning``): far cheaper on a large soup, but a record
    /// deleted in the server's current minute is left for a later clean, and a full comparison
    /// still runs once a day and when the server no longer holds the window. Without it, every
    /// id is compared, as Mobile Sync does: no ghost is left when it returns.
    ///
    /// - Throws: `ghostCleaningStopped` when a stop arrives (nothing is deleted then),
    ///   `wrongSyncType` for a sync up.
    public func cleanResyncGhosts(id: Int64, incremental: Bool = false) async throws -> Int {
        try requireAccepting("cleanResyncGhosts")
        guard let state = try SyncState.byId(id, store: store) else {
            throw SyncError(.unknownSync, "no sync with id \(id)")
        }
        guard state.type == .syncDown else {
            throw SyncError(
                .wrongSyncType, "clean resync ghosts applies to sync downs; sync \(id) is a sync up")
        }
        return try await withCheckedThrowingContinuation { continuation in
            let job = machine.makeJob(
                syncId: id, name: state.name, kind: .cleanGhosts, soups: state.soups, alone: false)
            jobs[job.id] = JobHandles(ghosts: continuation, incremental: incremental)
            // Accepted: nothing suspended since `requireAccepting`, so no stop came between.
            carryOutAtOnce(machine.handle(.submitted(job)))
        }
    }

    func createSync(
        type: SyncType, targetJSON: JSONObject, idField: String, options: SyncOptions, soupName: String,
        name: String?, children: ChildrenSoup? = nil
    ) async throws -> SyncState {
        try SyncCreationRules.require(
            name: name, soupName: soupName, idFieldName: idField, children: children)
        let fresh = SyncState(
            name: name, type: type, target: targetJSON, options: options, soupName: soupName)
        let row = fresh.row
        let access = try writer()
        let inserted = try await access.write { transaction in
            try transaction.registerSoup(soupName, indexSpecs: [IndexSpec(path: idField, type: .string)])
            if let children {
                try transaction.registerSoup(
                    children.soupName,
                    indexSpecs: [
                        IndexSpec(path: children.idFieldName, type: .string),
                        IndexSpec(path: children.parentIdFieldName, type: .string),
                    ])
            }
            return try transaction.insertSyncState(row)
        }
        var created = fresh
        created.id = inserted.id
        // Observers hear of the new sync; its listener does not (Mobile Sync's first callback is
        // `running`).
        notify(created, onUpdate: nil)
        return created
    }

    /// `new`/`stopped`/`failed`/`done` → `running`, persisted, then queued.
    ///
    /// A sync persisted as `running` that this manager does not run was left so by a run whose
    /// final state could not be written (a full disk): only the lease holder runs syncs, so it
    /// is resumed like a stopped one.
    func submit(_ state: SyncState, onUpdate: SyncUpdateBlock?) async throws -> SyncState {
        guard !machine.isRunActive(state.id) else {
            throw SyncError(.alreadyRunning, "sync \(state.name ?? String(state.id)) is already running")
        }
        carryOutAtOnce(machine.handle(.submitting(syncId: state.id)))
        let start = StatusChange.start(state)
        if let failure = await changeStatus(start, onUpdate: onUpdate) { throw failure }
        // A stop may have arrived while persisting: then the machine ends the job at once.
        let job = machine.makeJob(
            syncId: state.id, name: state.name, kind: .run, soups: state.soups, alone: state.type == .syncUp)
        jobs[job.id] = JobHandles(onUpdate: onUpdate)
        await carryOut(machine.handle(.submitted(job)))
        return start.state ?? state
    }
}
