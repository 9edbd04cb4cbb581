import BatonStore

extension SyncManager {
    /// Fetches page by page; each page is saved with the sync's progress (and, when sorted, its
    /// maxTimeStamp) in one short write transaction, so a stop or a kill loses at most the page
    /// in flight. The next page is fetched while the current one is saved (network and store
    /// overlap); a stop cancels that fetch, and the page it was getting is simply missing, to be
    /// fetched by the restart. A page being saved when a stop lands is finished, unless
    /// ``endPageSaveEarly()`` ends it at the next record: a sorted page then commits the records
    /// saved so far with the time stamp of the last of them, so nothing saved is fetched again
    /// beyond the records sharing that stamp.
    ///
    /// `state` only ever holds what committed: each page's successor state is built aside and
    /// taken on once its save commits. A failed save (stop deadline, full disk, I/O error, a
    /// lock held elsewhere) throws with `state` at the last committed page, so the run resumes
    /// there and fetches the failed page again.
    func runSyncDown(_ state: inout SyncState, inclusive: Bool, onUpdate: SyncUpdateBlock?) async throws {
        let target = try factory.syncDownTarget(from: state.target)
        let sorted = target.isSyncDownSortedByLatestModification()
        try checkForStop(state.id)
        var page = try await target.startFetch(maxTimeStamp: state.maxTimeStamp, inclusive: inclusive)
        // Mobile Sync reports the now known size, at progress 0, before saving anything.
        var sized = state
        sized.totalSize = page.totalSize
        sized.progress = 0
        try await persist(sized, onUpdate: onUpdate)
        state = sized
        var fetched = 0
        var newest = state.maxTimeStamp
        // Stamps later than this were given while the query was paged (none when the target
        // cannot tell): out of the query's order, never a place to resume from.
        let highWater = page.highWaterMark ?? .max
        var newestInOrder = state.maxTimeStamp
        while true {
            try checkForStop(state.id)
            let pageNewest =
                sorted
                ? Self.sortedWatermark(page.records, after: newest, before: highWater, target: target)
                : newest
            var next = state
            next.totalSize = page.totalSize
            next.maxTimeStamp = pageNewest
            let pageFetched = fetched + page.records.count
            // As Mobile Sync: progress moves (and is reported) only below 100%; `done` says the rest.
            let reportsProgress = pageFetched < next.totalSize
            if reportsProgress { next.progress = pageFetched * 100 / next.totalSize }
            if let hook = hooks?.pageWillSave { hook(&state, next) }
            // Leaving the loop by a throw cancels (and awaits) this fetch.
            let current = page
            async let following = target.continueFetch(after: current)
            let (before, resumeStamp, committedProgress) = (fetched, newest, state.progress)
            let saved = try await savePage(
                current.records, idField: target.idFieldName, children: target.childrenSoup
            ) { [next] count in
                // The save was ended early (a stop in a hurry). A sorted page keeps the records saved so far and
                // resumes after them: every record still to come has a time stamp at least as
                // late. An unsorted run keeps nothing of the page: its restart starts over.
                guard count < current.records.count else { return next }
                guard sorted, count > 0 else { return nil }
                var partial = next
                partial.maxTimeStamp = Self.sortedWatermark(
                    current.records[..<count], after: resumeStamp, before: highWater, target: target)
                partial.progress = committedProgress
                if before + count < next.totalSize {
                    partial.progress = (before + count) * 100 / next.totalSize
                }
                return partial
            }
            state = saved.state
            guard saved.records == current.records.count else { throw SyncInterrupted() }
            newest = pageNewest
            newestInOrder = Self.newestTimeStamp(
                current.records, after: newestInOrder, atMost: highWater, target: target)
            fetched = pageFetched
            if reportsProgress { notify(state, onUpdate: onUpdate) }
            try checkForStop(state.id)
            guard let next = try await following else { break }
            page = next
        }
        // A complete run has served every record the query matched when it started, so the next
        // run (`>`) may start from the newest stamp given before then; what changed since has a
        // later one. An unsorted run moves maxTimeStamp only here: it may deliver an old record
        // last.
        state.maxTimeStamp = max(state.maxTimeStamp, newestInOrder)
    }

    /// The greatest time stamp among `records` that is at most `highWater`, or `newest` if
    /// none is later.
    static func newestTimeStamp(
        _ records: [JSONObject], after newest: Int64, atMost highWater: Int64, target: any SyncDownTarget
    ) -> Int64 {
        var newest = newest
        for record in records {
            for stamp in target.timeStamps(of: record) where stamp > newest && stamp <= highWater {
                newest = stamp
            }
        }
        return newest
    }

    /// Where a sorted fetch may resume (`>=`) after this page: the time stamp of its last record
    /// that was given before the query started (earlier than `highWater`), or `newest` if none.
    ///
    /// The server fixes a query's ordered ids when the query starts but reads each page's
    /// records as they are when the page is served, as Salesforce's query locators do. A record
    /// modified meanwhile comes with its new time stamp, later than every record the query
    /// ordered, in the middle of the order (or at a page's end); resuming from it would pass
    /// records still to be served, and records served earlier with their old values. A record
    /// stamped before `highWater` was not modified since the query started, so its stamp is in
    /// the query's order: every record still to be served has one at least as late, and every
    /// record modified since has a later one, so the resume asks for all of them again. The
    /// bound is strict because a server that stamps in coarse steps (Salesforce's seconds) may
    /// give a later modification the same stamp as `highWater`.
    static func sortedWatermark(
        _ records: some BidirectionalCollection<JSONObject>, after newest: Int64, before highWater: Int64,
        target: any SyncDownTarget
    ) -> Int64 {
        for record in records.reversed() {
            if let stamp = target.modificationTimeStamp(of: record), stamp < highWater {
                return max(stamp, newest)
            }
        }
        return newest
    }

    /// Fetches every remote id of the target's query (checking for a stop on every page), then
    /// deletes, in one transaction, the sync's unmodified local records not among them.
    func cleanGhosts(syncId: Int64) async throws -> Int {
        guard let state = try SyncState.byId(syncId, store: store) else {
            throw SyncError(.unknownSync, "no sync with id \(syncId)")
        }
        let target = try factory.syncDownTarget(from: state.target)
        let soup = state.soupName
        let idField = target.idFieldName
        var remote = Set<String>()
        var remoteChildren = Set<String>()
        try checkForStop(syncId)
        if target.checksGhostsByExistence {
            // Ask which of the sync's clean records the server still has, 500 at a time.
            let local = try await store.read { reader -> [String] in
                var ids: [String] = []
                try reader.forEachPage(
                    of: SoupQuery(where: [.exact(LocalFlags.syncId, .int(syncId))]), in: soup
                ) { entries in
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
        } else {
            var page = try await target.startRemoteIdFetch()
            while true {
                try checkForStop(syncId)
                remote.formUnion(page.ids)
                remoteChildren.formUnion(page.childIds)
                guard let next = try await target.continueRemoteIdFetch(after: page) else { break }
                page = next
            }
        }
        try checkForStop(syncId)
        let remoteIds = remote
        let remoteChildIds = remoteChildren
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
                "baton.deletedChildren": "\(deletedChildren)",
            ])
        return deleted
    }
}
