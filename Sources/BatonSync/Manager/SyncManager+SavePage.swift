import BatonStore
import Foundation
import Synchronization

extension SyncManager {
    /// What a page's save committed: how many of its records (all of them unless the save was
    /// ended early) and the sync's state saved with them.
    package struct SavedPage: Sendable {
        package var records: Int
        package var state: SyncState
    }

    /// Upserts a page by server id (clearing local flags, stamping the sync id) and saves the
    /// sync's state, in one fenced transaction; see ``writePage(_:_:in:interrupted:stateAfter:)``.
    ///
    /// The write runs on ``PageSaves``' queue (awaited, so still in order), outside the cooperative
    /// pool and out of reach of a stop's cancellation: a page that arrived is saved even if a
    /// stop lands meanwhile, and the stop is seen at the next check. ``endPageSaveEarly()``
    /// raises a flag the write reads before each record: the page then ends there, with the
    /// state `stateAfter(n)` gives for the `n` records saved so far, or with nothing of the page
    /// when it gives none.
    func savePage(
        _ records: [JSONObject], idField: String, dateField: String, children: ChildrenSoup?,
        incremental: Bool,
        stateAfter: @escaping @Sendable (Int) -> SyncState?
    ) async throws -> SavedPage {
        guard let full = stateAfter(records.count) else {
            preconditionFailure("a whole page always has a state to save")
        }
        let page = PageWrite(
            soupName: full.soupName, syncId: full.id, leaveIfChanged: full.mergeMode == .leaveIfChanged,
            idField: idField, dateField: dateField, children: children, incremental: incremental)
        let access = try writer()
        let cut = StopFlag()
        pageSaves.cuts[ObjectIdentifier(cut)] = cut
        defer { pageSaves.cuts[ObjectIdentifier(cut)] = nil }
        return try await withCheckedThrowingContinuation { continuation in
            pageSaves.queue.async {
                continuation.resume(
                    with: Result {
                        try access.write { transaction in
                            try Self.writePage(
                                records, page, in: transaction, interrupted: { cut.isRaised },
                                stateAfter: stateAfter)
                        }
                    })
            }
        }
    }

    /// Ends the pages sync downs are saving (or waiting to save, behind another's) at their next
    /// record instead of letting them finish, once a stop was requested (before that, it does
    /// nothing): a sync down that resumes by id commits the records saved so far with the id of
    /// the last of them, and its restart asks for the ids after it; another keeps nothing of the
    /// page (its restart starts over anyway). This buys a stop that does not wait for a save.
    ///
    /// - Returns: whether a page was being saved.
    @discardableResult
    public func endPageSaveEarly() -> Bool {
        guard machine.state != .acceptingSyncs, !pageSaves.cuts.isEmpty else { return false }
        for cut in pageSaves.cuts.values { cut.raise() }
        return true
    }

    /// Where page saves run: a thread outside Swift's cooperative pool, which a save of a few
    /// milliseconds would otherwise hold from the work that reacts to a stop; and the flag
    /// ``endPageSaveEarly()`` raises to end the page being saved at its next record.
    struct PageSaves {
        /// Serial: the pages of syncs running at once are saved one at a time, in turn.
        let queue = DispatchQueue(label: "baton.sync.page-save")
        /// The flag of each page being saved or waiting for its turn.
        var cuts: [ObjectIdentifier: StopFlag] = [:]
    }

    /// Where a sync down's page goes and how it is merged.
    package struct PageWrite: Sendable {
        package var soupName: String
        package var syncId: Int64
        /// Locally modified records (or trees with anything modified) are left alone.
        package var leaveIfChanged: Bool
        package var idField: String
        /// The field holding the server's modification stamp (``FetchedRecordMerge``).
        package var dateField: String
        /// Set when each record is a parent holding its children, which go to their own soup.
        package var children: ChildrenSoup?
        /// The run fetches only what changed since a lower bound (not every record).
        package var incremental: Bool

        package init(
            soupName: String, syncId: Int64, leaveIfChanged: Bool, idField: String,
            dateField: String = "LastModifiedDate", children: ChildrenSoup?, incremental: Bool = false
        ) {
            self.soupName = soupName
            self.syncId = syncId
            self.leaveIfChanged = leaveIfChanged
            self.idField = idField
            self.dateField = dateField
            self.children = children
            self.incremental = incremental
        }
    }

    /// Writes `records` in order, then the sync's state `stateAfter(records.count)`.
    ///
    /// Before each record it asks `interrupted()`. Once that says yes, the page ends there: with
    /// the state `stateAfter(n)` for the `n` records written so far when there is one (they
    /// commit with it), else by throwing ``SyncInterrupted``, which rolls the whole transaction
    /// back.
    package static func writePage(
        _ records: [JSONObject], _ page: PageWrite, in transaction: StoreTransaction,
        interrupted: () -> Bool, stateAfter: (Int) -> SyncState?
    ) throws -> SavedPage {
        for (index, record) in records.enumerated() {
            if interrupted() {
                guard let partial = stateAfter(index) else { throw SyncInterrupted() }
                try transaction.updateSyncState(partial.row)
                return SavedPage(records: index, state: partial)
            }
            try write(record, page, in: transaction)
        }
        guard let full = stateAfter(records.count) else {
            preconditionFailure("a whole page always has a state to save")
        }
        try transaction.updateSyncState(full.row)
        return SavedPage(records: records.count, state: full)
    }

    /// Merges one record of a page (and its children) into the store (``FetchedRecordMerge``).
    static func write(_ record: JSONObject, _ page: PageWrite, in transaction: StoreTransaction) throws {
        let idField = page.idField
        guard let serverId = record[idField], !serverId.isNull else { return }
        let existing = try transaction.storedEntry(where: idField, equals: serverId, in: page.soupName)
        guard let children = page.children else {
            try merge(
                record, into: existing, soup: page.soupName, page: page, dateField: page.dateField,
                in: transaction)
            return
        }
        if page.leaveIfChanged {
            if let existing, LocalFlags.isDirty(existing.record) { return }
            if try transaction.query(
                SoupQuery(where: [.exact(children.parentIdFieldName, serverId)]), in: children.soupName
            ).contains(where: { LocalFlags.isDirty($0.record) }) {
                return
            }
        }
        var parent = record
        parent[children.relationshipKey] = nil
        try merge(
            parent, into: existing, soup: page.soupName, page: page, dateField: page.dateField,
            in: transaction)
        for child in record[children.relationshipKey]?.arrayValue ?? [] {
            guard var child = child.objectValue, let childId = child[children.idFieldName], !childId.isNull
            else {
                continue
            }
            child[children.parentIdFieldName] = serverId
            let stored = try transaction.storedEntry(
                where: children.idFieldName, equals: childId, in: children.soupName)
            try merge(
                child, into: stored, soup: children.soupName, page: page,
                dateField: children.modificationDateFieldName,
                in: transaction)
        }
    }

    /// Saves `record` over `existing` unless ``FetchedRecordMerge`` says to keep what is there.
    private static func merge(
        _ record: JSONObject, into existing: SoupEntry?, soup: String, page: PageWrite, dateField: String,
        in transaction: StoreTransaction
    ) throws {
        let decision = FetchedRecordMerge.decide(
            existing: existing?.record, fetched: record, leaveIfChanged: page.leaveIfChanged,
            incremental: page.incremental, dateField: dateField, syncId: page.syncId)
        guard decision == .write else { return }
        try transaction.upsertClean(record, syncId: page.syncId, into: soup, entryId: existing?.entryId)
    }
}

/// Raised once, from any thread, to end a page's save early; read by the save before each
/// record.
final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    func raise() { raised.store(true, ordering: .releasing) }

    var isRaised: Bool { raised.load(ordering: .acquiring) }
}
