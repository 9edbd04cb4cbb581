import BatonStore

extension SyncManager {
    /// Fetches page by page; each page is saved with the sync's progress (and, when sorted, its
    /// maxTimeStamp) in one short write transaction, so a stop or a kill loses at most the page
    /// in flight. The next page is fetched while the current one is saved (network and store
    /// overlap); a stop cancels that fetch, and the page it was getting is simply missing, to be
    /// fetched by the restart.
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
        while true {
            try checkForStop(state.id)
            let pageNewest =
                sorted
                ? Self.sortedWatermark(page.records, after: newest, target: target)
                : Self.newestTimeStamp(page.records, after: newest, target: target)
            var next = state
            next.totalSize = page.totalSize
            if sorted { next.maxTimeStamp = pageNewest }
            let pageFetched = fetched + page.records.count
            // As Mobile Sync: progress moves (and is reported) only below 100%; `done` says the rest.
            let reportsProgress = pageFetched < next.totalSize
            if reportsProgress { next.progress = pageFetched * 100 / next.totalSize }
            if let hook = hooks?.pageWillSave { hook(&state, next) }
            // Leaving the loop by a throw cancels (and awaits) this fetch.
            let current = page
            async let following = target.continueFetch(after: current)
            try await savePage(current.records, state: next, idField: target.idFieldName)
            state = next
            newest = pageNewest
            fetched = pageFetched
            if reportsProgress { notify(state, onUpdate: onUpdate) }
            try checkForStop(state.id)
            guard let next = try await following else { break }
            page = next
        }
        // Unsorted fetches may deliver an old record last, so only a complete run may move
        // maxTimeStamp. A sorted run's is its last page's watermark, already saved.
        if !sorted { state.maxTimeStamp = max(state.maxTimeStamp, newest) }
    }

    /// The greatest time stamp among `records`, or `newest` if none is later.
    static func newestTimeStamp(_ records: [JSONObject], after newest: Int64, target: any SyncDownTarget)
        -> Int64
    {
        var newest = newest
        for record in records {
            if let stamp = target.modificationTimeStamp(of: record), stamp > newest { newest = stamp }
        }
        return newest
    }

    /// Where a sorted fetch may resume after this page: the time stamp of its last record, not
    /// its greatest one.
    ///
    /// The server fixes a query's ordered ids when the query starts but reads each page's
    /// records as they are when the page is served, as Salesforce's query locators do. A record
    /// modified meanwhile comes with its new time stamp, later than every record the query
    /// ordered, in the middle of the order; the page's greatest stamp would then pass records
    /// still to be served, and records served earlier with their old values. The last record's
    /// stamp is in the query's order, and every record modified since the query started has a
    /// later one, so a resume (`>=`) or the next run (`>`) asks for all of them again. On a
    /// sorted fetch that no write overlapped, the last record's stamp is the greatest, as in
    /// Mobile Sync.
    ///
    /// Not covered: the page's last record itself modified while the query was paged. Its new
    /// stamp is then out of order too, and nothing in the page tells it from a record that was
    /// simply the newest.
    static func sortedWatermark(_ records: [JSONObject], after newest: Int64, target: any SyncDownTarget)
        -> Int64
    {
        for record in records.reversed() {
            if let stamp = target.modificationTimeStamp(of: record) { return stamp }
        }
        return newest
    }

    /// Upserts a page by server id (clearing local flags, stamping the sync id) and saves the
    /// sync's state, in one fenced transaction. Under `leaveIfChanged`, locally modified records
    /// are left alone.
    func savePage(_ records: [JSONObject], state: SyncState, idField: String) async throws {
        let row = state.row
        let soup = state.soupName
        let syncId = state.id
        let leaveIfChanged = state.mergeMode == .leaveIfChanged
        let access = try writer()
        // A page that arrived is saved even if a stop lands meanwhile: the write runs in a task
        // of its own (awaited, so still in order) that the stop's cancellation does not reach;
        // the stop is seen at the next check. Only the page in flight is ever lost.
        try await Task.detached {
            try await access.write { transaction in
                for record in records {
                    guard let serverId = record[idField], !serverId.isNull else { continue }
                    if leaveIfChanged,
                        let existing = try transaction.entry(where: idField, equals: serverId, in: soup),
                        LocalFlags.isDirty(existing.record)
                    {
                        continue
                    }
                    try transaction.upsertClean(record, syncId: syncId, into: soup, externalIdPath: idField)
                }
                try transaction.updateSyncState(row)
            }
        }.value
    }

    /// Fetches every remote id of the target's query (checking for a stop on every page), then
    /// deletes, in one transaction, the sync's unmodified local records not among them.
    func cleanGhosts(syncId: Int64) async throws -> Int {
        guard let state = try SyncState.byId(syncId, store: store) else {
            throw SyncError(.unknownSync, "no sync with id \(syncId)")
        }
        let target = try factory.syncDownTarget(from: state.target)
        var remote = Set<String>()
        try checkForStop(syncId)
        var page = try await target.startRemoteIdFetch()
        while true {
            try checkForStop(syncId)
            remote.formUnion(page.ids)
            guard let next = try await target.continueRemoteIdFetch(after: page) else { break }
            page = next
        }
        try checkForStop(syncId)
        let remoteIds = remote
        let soup = state.soupName
        let idField = target.idFieldName
        let access = try writer()
        let deleted = try await access.write { transaction -> Int in
            var ghosts: [Int64] = []
            try transaction.forEachPage(
                of: SoupQuery(where: [.exact(LocalFlags.syncId, .int(syncId))]), in: soup
            ) { entries in
                for entry in entries where !LocalFlags.isDirty(entry.record) {
                    guard let id = entry.record[idField]?.stringValue, !remoteIds.contains(id) else {
                        continue
                    }
                    ghosts.append(entry.entryId)
                }
                return true
            }
            return try transaction.delete(entryIds: ghosts, from: soup)
        }
        logger.info(
            "cleaned resync ghosts", metadata: ["baton.sync": "\(syncId)", "baton.deleted": "\(deleted)"])
        return deleted
    }
}
