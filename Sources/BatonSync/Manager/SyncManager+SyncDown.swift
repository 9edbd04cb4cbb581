import BatonStore

extension SyncManager {
    /// Fetches page by page; each page is saved with the sync's progress and position (the last
    /// id saved, for a target that resumes by id) in one short write transaction, so a stop or a
    /// kill loses at most the page in flight. The next page is fetched while the current one is
    /// saved (network and store overlap); a stop cancels that fetch, and the page it was getting
    /// is simply missing, to be fetched by the restart. A page being saved when a stop lands is
    /// finished, unless ``endPageSaveEarly()`` ends it at the next record: a target that resumes
    /// by id then commits the records saved so far with the last of their ids, so nothing saved
    /// is fetched again.
    ///
    /// Where the run starts and where the next one will is ``SyncDownPosition``'s rule.
    ///
    /// `state` only ever holds what committed: each page's successor state is built aside and
    /// taken on once its save commits. A failed save (stop deadline, full disk, I/O error, a
    /// lock held elsewhere) throws with `state` at the last committed page, so the run resumes
    /// there and fetches the failed page again.
    func runSyncDown(_ state: inout SyncState, onUpdate: SyncUpdateBlock?) async throws {
        let target = try syncDownTarget(of: state)
        let resumable = target.resumesAfterId
        try checkForStop(state.id)
        var page = try await target.startFetch(state.position.fetchStart(resumesAfterId: resumable))
        // Mobile Sync reports the now known size, at progress 0, before saving anything. The
        // run's server time goes with it, before any page can rely on it.
        var sized = state
        sized.totalSize = page.totalSize
        sized.progress = 0
        sized.position = state.position.started(serverTime: page.serverTime, resumesAfterId: resumable)
        try await persist(sized, onUpdate: onUpdate)
        state = sized
        var fetched = 0
        while true {
            try checkForStop(state.id)
            var next = state
            next.totalSize = page.totalSize
            next.maxTimeStamp = Self.newestTimeStamp(
                page.records[...], after: state.maxTimeStamp, target: target)
            next.position = state.position.saved(
                through: page.records.last?[target.idFieldName]?.stringValue, resumesAfterId: resumable)
            let pageFetched = fetched + page.records.count
            // As Mobile Sync: progress moves (and is reported) only below 100%; `done` says the rest.
            let reportsProgress = pageFetched < next.totalSize
            if reportsProgress { next.progress = pageFetched * 100 / next.totalSize }
            if let hook = hooks?.pageWillSave { hook(&state, next) }
            // Leaving the loop by a throw cancels (and awaits) this fetch.
            let current = page
            async let following = target.continueFetch(after: current)
            let (before, committed) = (fetched, state)
            let saved = try await savePage(
                current.records, idField: target.idFieldName, dateField: target.modificationDateFieldName,
                children: target.childrenSoup, incremental: state.position.modifiedSince != nil
            ) { [next] count in
                // The save was ended early (a stop in a hurry). A target that resumes by id keeps
                // the records saved so far and resumes after the last of them. Another keeps
                // nothing of the page: its restart starts over.
                guard count < current.records.count else { return next }
                guard resumable, count > 0 else { return nil }
                var partial = next
                let kept = current.records[..<count]
                partial.maxTimeStamp = Self.newestTimeStamp(
                    kept, after: committed.maxTimeStamp, target: target)
                partial.position = committed.position.saved(
                    through: kept.last?[target.idFieldName]?.stringValue, resumesAfterId: true)
                partial.progress = committed.progress
                if before + count < next.totalSize {
                    partial.progress = (before + count) * 100 / next.totalSize
                }
                return partial
            }
            state = saved.state
            guard saved.records == current.records.count else { throw SyncInterrupted() }
            fetched = pageFetched
            if reportsProgress { notify(state, onUpdate: onUpdate) }
            try checkForStop(state.id)
            guard let next = try await following else { break }
            page = next
        }
        // Every record the query matched when the run started is saved: the next run starts
        // from the server time it started at, less the overlap (persisted with `done`).
        state.position = state.position.completed(overlap: target.overlap)
    }

    /// The greatest time stamp `records` carry (children's included), or `newest` if none is
    /// later: the sync's `maxTimeStamp`, Mobile Sync's field, once they are saved.
    static func newestTimeStamp(
        _ records: ArraySlice<JSONObject>, after newest: Int64, target: any SyncDownTarget
    ) -> Int64 {
        var newest = newest
        for record in records {
            for stamp in target.timeStamps(of: record) where stamp > newest { newest = stamp }
        }
        return newest
    }

    /// Deletes the sync's unmodified local records the server no longer has (ghosts), as
    /// ``GhostCleaning`` plans: a comparison of every id, or, asked for `incremental`, the
    /// deletions since the last clean when the target can ask for them and the server still
    /// holds the window. The ghosts go, and the marks move, in one transaction.
    func cleanGhosts(syncId: Int64, incremental: Bool = false) async throws -> Int {
        guard let state = try SyncState.byId(syncId, store: store) else {
            throw SyncError(.unknownSync, "no sync with id \(syncId)")
        }
        let target = try syncDownTarget(of: state)
        try checkForStop(syncId)
        let plan = GhostCleaning.plan(
            coveredUntil: state.ghostsCoveredUntil, fullAt: state.ghostsFullAt, now: WallClock.nowMillis(),
            incremental: incremental)
        var reason: GhostCleaning.Reason
        switch plan {
        case .fullComparison(let why):
            reason = why
        case .deletionsSince(let since):
            switch try await target.deletedSince(since, until: WallClock.nowMillis()) {
            case .deleted(let ids, let childIds, let coveredUntil)?:
                try checkForStop(syncId)
                return try await removeDeleted(
                    ids: ids, childIds: childIds, coveredUntil: coveredUntil, state: state, target: target)
            case .tooSoon?:
                // The server answers no window of a minute or less: what was deleted since is
                // asked for by a later clean, from the same mark.
                logger.info(
                    "clean resync ghosts: the window since the last clean is too short to ask for",
                    metadata: ["baton.sync": "\(syncId)"])
                return 0
            case .expired(let why)?:
                logger.info(
                    "clean resync ghosts compares every id: the server no longer holds the window",
                    metadata: ["baton.sync": "\(syncId)", "baton.reason": "\(why)"])
                reason = .windowExpired
            case nil:
                reason = .targetCannotTell
            }
        }
        return try await compareEveryId(state, target: target, reason: reason)
    }

    /// The incremental clean: deletes the sync's unmodified records whose ids the server deleted
    /// (a parent with a dirty child spared, as Mobile Sync spares it), and moves the window's
    /// start to `coveredUntil`, in one transaction.
    func removeDeleted(
        ids: Set<String>, childIds: Set<String>, coveredUntil: Int64, state: SyncState,
        target: any SyncDownTarget
    ) async throws -> Int {
        let (syncId, soup, idField, children) = (
            state.id, state.soupName, target.idFieldName, target.childrenSoup
        )
        let fullAt = state.ghostsFullAt
        let access = try writer()
        let (deleted, deletedChildren) = try await access.write { transaction -> (Int, Int) in
            func clean(_ soup: String, _ field: String, _ id: String) throws -> [SoupEntry] {
                try transaction.query(
                    SoupQuery(where: [.exact(field, .string(id)), .exact(LocalFlags.syncId, .int(syncId))]),
                    in: soup
                ).filter { !LocalFlags.isDirty($0.record) }
            }
            var ghosts: [String: [Int64]] = [:]
            for id in ids.sorted() {
                let found = try clean(soup, idField, id).map(\.entryId)
                if !found.isEmpty { ghosts[id] = found }
            }
            var childGhosts: [Int64] = []
            if let children, try transaction.soupIfExists(children.soupName) != nil {
                for id in childIds.sorted() {
                    childGhosts += try clean(children.soupName, children.idFieldName, id).map(\.entryId)
                }
                for parentId in ghosts.keys.sorted() {
                    let dirtyChild = try transaction.query(
                        SoupQuery(where: [.exact(children.parentIdFieldName, .string(parentId))]),
                        in: children.soupName
                    ).contains { LocalFlags.isDirty($0.record) }
                    if dirtyChild { ghosts[parentId] = nil }
                }
            }
            let removed = try transaction.delete(entryIds: ghosts.values.flatMap { $0 }, from: soup)
            let removedChildren =
                try children.map { try transaction.delete(entryIds: childGhosts, from: $0.soupName) } ?? 0
            try transaction.setGhostCleaningMarks(id: syncId, coveredUntil: coveredUntil, fullAt: fullAt)
            return (removed, removedChildren)
        }
        logger.info(
            "cleaned resync ghosts from the server's deletions",
            metadata: [
                "baton.sync": "\(syncId)", "baton.deleted": "\(deleted)",
                "baton.deletedChildren": "\(deletedChildren)", "baton.serverDeleted": "\(ids.count)",
            ])
        return deleted
    }

    /// Mobile Sync's clean: reads the server's clock (for the next window's start), fetches
    /// every remote id of the target's query (checking for a stop on every page), then deletes,
    /// in one transaction, the sync's unmodified local records not among them, and sets the
    /// marks.
    func compareEveryId(_ state: SyncState, target: any SyncDownTarget, reason: GhostCleaning.Reason)
        async throws -> Int
    {
        let (syncId, soup, idField) = (state.id, state.soupName, target.idFieldName)
        let serverTime = try await target.ghostCleaningServerTime()
        try checkForStop(syncId)
        let (remoteIds, remoteChildIds) = try await remoteIds(of: target, syncId: syncId, soup: soup)
        try checkForStop(syncId)
        let marks = GhostCleaning.marksAfterFull(
            serverTime: serverTime, overlap: target.overlap.inWholeMilliseconds)
        let children = target.childrenSoup
        let access = try writer()
        // As Mobile Sync: a parent with a dirty child is no ghost; the count is of parents.
        let (deleted, deletedChildren) = try await access.write { transaction -> (Int, Int) in
            var ghosts: [String: Int64] = [:]
            try transaction.forEachPage(
                of: SoupQuery(where: [.exact(LocalFlags.syncId, .int(syncId))]), in: soup
            ) { entries in
                for entry in entries where !LocalFlags.isDirty(entry.record) {
                    guard let id = entry.record[idField]?.stringValue, !remoteIds.contains(id) else {
                        continue
                    }
                    ghosts[id] = entry.entryId
                }
                return true
            }
            try transaction.setGhostCleaningMarks(
                id: syncId, coveredUntil: marks?.coveredUntil, fullAt: marks?.fullAt)
            guard let children else {
                return (try transaction.delete(entryIds: Array(ghosts.values), from: soup), 0)
            }
            var childGhosts: [Int64] = []
            try transaction.forEachPage(
                of: SoupQuery(where: [.exact(LocalFlags.syncId, .int(syncId))]), in: children.soupName
            ) { entries in
                for entry in entries {
                    let parentId = entry.record[children.parentIdFieldName]?.stringValue
                    if LocalFlags.isDirty(entry.record) {
                        if let parentId { ghosts[parentId] = nil }
                        continue
                    }
                    guard let id = entry.record[children.idFieldName]?.stringValue,
                        !remoteChildIds.contains(id)
                    else { continue }
                    childGhosts.append(entry.entryId)
                }
                return true
            }
            return (
                try transaction.delete(entryIds: Array(ghosts.values), from: soup),
                try transaction.delete(entryIds: childGhosts, from: children.soupName)
            )
        }
        logger.info(
            "cleaned resync ghosts",
            metadata: [
                "baton.sync": "\(syncId)", "baton.deleted": "\(deleted)",
                "baton.deletedChildren": "\(deletedChildren)", "baton.fullComparison": "\(reason.rawValue)",
            ])
        return deleted
    }

    /// The ids the server still has among what the sync's target selects (and, for a
    /// parent-children target, the children's), checking for a stop on every request: every
    /// remote id of the target's query, or, for a target that tells ghosts by existence, which of
    /// the sync's clean records the server still has, 500 at a time.
    func remoteIds(of target: any SyncDownTarget, syncId: Int64, soup: String) async throws -> (
        ids: Set<String>, childIds: Set<String>
    ) {
        var remote = Set<String>()
        var remoteChildren = Set<String>()
        guard target.checksGhostsByExistence else {
            var page = try await target.startRemoteIdFetch()
            while true {
                try checkForStop(syncId)
                remote.formUnion(page.ids)
                remoteChildren.formUnion(page.childIds)
                guard let next = try await target.continueRemoteIdFetch(after: page) else { break }
                page = next
            }
            return (remote, remoteChildren)
        }
        let idField = target.idFieldName
        let local = try await store.read { reader -> [String] in
            var ids: [String] = []
            try reader.forEachPage(of: SoupQuery(where: [.exact(LocalFlags.syncId, .int(syncId))]), in: soup)
            {
                entries in
                for entry in entries where !LocalFlags.isDirty(entry.record) {
                    if let id = entry.record[idField]?.stringValue { ids.append(id) }
                }
                return true
            }
            return ids
        }
        var start = 0
        while start < local.count {
            try checkForStop(syncId)
            let batch = Array(local[start..<min(local.count, start + 500)])
            start += batch.count
            remote.formUnion(try await target.existingIds(among: batch))
        }
        return (remote, remoteChildren)
    }
}
