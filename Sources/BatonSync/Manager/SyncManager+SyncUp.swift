import BatonStore
import Foundation

extension SyncManager {
    /// Sends the soup's local changes batch by batch, checking for a stop before each batch.
    /// Creates go as upserts on a client-generated external id (saved locally first), so a
    /// crash between the server's create and the local update never makes a duplicate. A record
    /// the server refuses keeps its flags and gets `__last_error__`; the sync still ends `done`,
    /// with the records refused counted in its state (``SyncState/refusedCount``).
    func runSyncUp(_ state: inout SyncState, onUpdate: SyncUpdateBlock?) async throws {
        let target = try syncUpTarget(of: state)
        let soup = state.soupName
        let tree = target as? any TreeSyncUpTarget
        // A parent-children sync goes tree by tree: each dirty parent, and each parent with a
        // dirty child.
        let dirtyIds = try await store.read { reader in
            try tree.map { try Self.dirtyTrees(reader, soup: soup, target: $0) }
                ?? reader.dirtyEntryIds(in: soup)
        }
        var counted = state
        counted.totalSize = dirtyIds.count
        counted.progress = 0
        counted.refusedCount = 0
        try await persist(counted, onUpdate: onUpdate)
        state = counted
        var refused = 0
        var processed = 0
        var start = 0
        while start < dirtyIds.count {
            try checkForStop(state.id)
            let batch = Array(dirtyIds[start..<min(dirtyIds.count, start + max(1, target.batchSize))])
            start += batch.count
            if let tree {
                for entryId in batch { refused += try await syncUpTree(entryId, state: state, target: tree) }
            } else {
                refused += try await syncUpBatch(batch, state: state, target: target)
            }
            let before = processed
            processed += batch.count
            // Mobile Sync reports each record's progress below 100% (`done` says the rest), so a
            // batch reports one update per record, once its last progress is persisted.
            let steps = (before + 1...processed).map { $0 * 100 / dirtyIds.count }.filter { $0 < 100 }
            guard let last = steps.last else { continue }
            var next = state
            next.progress = last
            next.refusedCount = refused
            try await writeState(next, through: writer())
            state = next
            for progress in steps {
                var step = next
                step.progress = progress
                notify(step, onUpdate: onUpdate)
            }
        }
        // The last batches may have had no progress of their own to persist: the count goes in
        // before the end (which writes the status only).
        guard state.refusedCount != refused else { return }
        var final = state
        final.refusedCount = refused
        try await writeState(final, through: writer())
        state = final
    }

    /// The fields and names one batch of a sync up works with.
    struct SyncUpBatch: Sendable {
        var soup: String
        var idField: String
        var extField: String
        var createFields: [String]?
        var updateFields: [String]?

        init(state: SyncState, target: any SyncUpTarget) {
            soup = state.soupName
            idField = target.idFieldName
            extField = target.externalIdFieldName
            // Mobile Sync: the target's own list for each kind of change replaces the sync's.
            createFields = target.createFieldlist ?? state.options.fieldlist
            updateFields = target.updateFieldlist ?? state.options.fieldlist
        }
    }

    /// What leaveIfChanged's comparison with the server leaves to send, and why it holds the
    /// others back.
    struct Compared: Sendable {
        var toSend: [LocalChange]
        /// Records the server no longer has.
        var serverGone: Set<Int64> = []
        /// Records whose server copy could not be compared, with the reason.
        var uncompared: [Int64: String] = [:]
    }

    /// One batch: classify and prepare the records (locally, durably), compare them with the
    /// server under leaveIfChanged, send, and apply the outcomes in one transaction. Returns the
    /// number of records the server refused.
    func syncUpBatch(_ entryIds: [Int64], state: SyncState, target: any SyncUpTarget) async throws -> Int {
        let batch = SyncUpBatch(state: state, target: target)
        let access = try writer()
        let (changes, classified) = try await classify(entryIds, batch, access: access)
        guard !changes.isEmpty else { return 0 }
        let compared =
            state.mergeMode == .leaveIfChanged
            ? try await compareWithServer(changes, batch, state: state, target: target)
            : Compared(toSend: changes)
        try checkForStop(state.id)
        let (outcomes, resent) = try await send(
            compared.toSend, batch, state: state, target: target, access: access)
        // Each record as it was when its change was made, to tell a local edit made meanwhile.
        let sentRecords = classified.merging(resent) { _, new in new }
        return try await applyOutcomes(
            changes, outcomes: outcomes, sentRecords: sentRecords, compared: compared, batch, access: access)
    }

    /// Classifies the batch's records (``LocalChangePlan``); gives new records their external id
    /// and drops created-then-deleted ones, locally and durably, before anything reaches the
    /// server. Returns the changes and each record as it was sent.
    func classify(_ entryIds: [Int64], _ batch: SyncUpBatch, access: WriteAccess) async throws -> (
        [LocalChange], [Int64: JSONObject]
    ) {
        let (soup, idField, extField) = (batch.soup, batch.idField, batch.extField)
        let (createFields, updateFields) = (batch.createFields, batch.updateFields)
        return try await access.write {
            transaction -> ([LocalChange], [Int64: JSONObject]) in
            var changes: [LocalChange] = []
            var sentRecords: [Int64: JSONObject] = [:]
            var neverSent: [Int64] = []
            for entryId in entryIds {
                guard var record = try transaction.entry(entryId, in: soup)?.record else { continue }
                let plan = LocalChangePlan.classify(record, idField: idField, externalIdField: extField)
                switch plan {
                case .none: continue
                case .drop:
                    neverSent.append(entryId)
                    continue
                case .create(needsExternalId: true):
                    record[extField] = .string(UUID().uuidString)
                    try transaction.upsert(record, into: soup, entryId: entryId)
                case .create, .update, .delete: break
                }
                guard
                    let change = plan.change(
                        entryId: entryId, record: record, externalIdField: extField,
                        createFields: createFields,
                        updateFields: updateFields)
                else { continue }
                changes.append(change)
                if change.kind != .delete { sentRecords[entryId] = record }
            }
            try transaction.delete(entryIds: neverSent, from: soup)
            return (changes, sentRecords)
        }
    }

    /// leaveIfChanged: holds back records changed on the server since they were fetched. When
    /// the server's dates cannot be fetched, the sync goes on as Mobile Sync's does: the records
    /// it cannot compare stay dirty for the next sync up, creates go.
    func compareWithServer(
        _ changes: [LocalChange], _ batch: SyncUpBatch, state: SyncState, target: any SyncUpTarget
    ) async throws -> Compared {
        let soup = batch.soup
        var uncompared: [Int64: String] = [:]
        let ids = changes.compactMap(\.serverId)
        var serverStamps: [String: Int64] = [:]
        do {
            if !ids.isEmpty { serverStamps = try await target.fetchModificationTimeStamps(ids: ids) }
        } catch {
            try checkForStop(state.id)
            try Task.checkCancellation()
            logger.warning(
                "sync up goes on without the server's modification dates; the records they were for stay dirty",
                metadata: [
                    "baton.sync": "\(state.id)", "baton.records": "\(ids.count)",
                    "baton.error": "\(error)",
                ])
            for change in changes where change.serverId != nil {
                uncompared[change.entryId] =
                    "not sent: the server's modification date could not be fetched (leaveIfChanged): \(error)"
            }
        }
        let localStamps = try await store.read { reader -> [Int64: Int64] in
            var stamps: [Int64: Int64] = [:]
            for change in changes where change.serverId != nil {
                if let record = try reader.entry(change.entryId, in: soup)?.record,
                    let stamp = target.modificationTimeStamp(of: record)
                {
                    stamps[change.entryId] = stamp
                }
            }
            return stamps
        }
        var serverGone: Set<Int64> = []
        let toSend = changes.filter { change in
            guard let serverId = change.serverId else { return true }
            if uncompared[change.entryId] != nil { return false }
            guard let serverStamp = serverStamps[serverId] else {
                serverGone.insert(change.entryId)
                return change.kind == .delete
            }
            return serverStamp <= (localStamps[change.entryId] ?? Int64.max)
        }
        return Compared(toSend: toSend, serverGone: serverGone, uncompared: uncompared)
    }

    /// Sends the changes; under overwrite, updates of records deleted on the server are created
    /// again. Returns each record's outcome and the records sent again as creates.
    func send(
        _ toSend: [LocalChange], _ batch: SyncUpBatch, state: SyncState, target: any SyncUpTarget,
        access: WriteAccess
    ) async throws -> ([Int64: SyncUpOutcome], [Int64: JSONObject]) {
        let (soup, extField, createFields) = (batch.soup, batch.extField, batch.createFields)
        var outcomes: [Int64: SyncUpOutcome] = [:]
        let sent = try await target.send(toSend)
        for (change, outcome) in zip(toSend, sent) { outcomes[change.entryId] = outcome }
        guard state.mergeMode == .overwrite else { return (outcomes, [:]) }
        let missing = toSend.filter { $0.kind == .update && outcomes[$0.entryId] == .missingOnServer }
        let (recreate, resent) = try await access.write {
            transaction -> ([LocalChange], [Int64: JSONObject]) in
            var again: [LocalChange] = []
            var resent: [Int64: JSONObject] = [:]
            for change in missing {
                guard var record = try transaction.entry(change.entryId, in: soup)?.record else {
                    continue
                }
                if record[extField]?.stringValue == nil {
                    record[extField] = .string(UUID().uuidString)
                    try transaction.upsert(record, into: soup, entryId: change.entryId)
                }
                again.append(
                    LocalChange(
                        entryId: change.entryId, kind: .create, serverId: nil,
                        fields: LocalChangePlan.outgoing(record, createFields, extField)))
                resent[change.entryId] = record
            }
            return (again, resent)
        }
        if !recreate.isEmpty {
            try checkForStop(state.id)
            for (change, outcome) in zip(recreate, try await target.send(recreate)) {
                outcomes[change.entryId] = outcome
            }
        }
        return (outcomes, resent)
    }

    /// Applies the outcomes locally in one transaction; returns the number of records the
    /// server refused (an error, or the record deleted there for an update, or its parent gone),
    /// each left with `__last_error__`. Records not sent (leaveIfChanged) are not counted.
    func applyOutcomes(
        _ changes: [LocalChange], outcomes: [Int64: SyncUpOutcome], sentRecords: [Int64: JSONObject],
        compared: Compared, _ batch: SyncUpBatch, access: WriteAccess
    ) async throws -> Int {
        let (soup, idField, extField) = (batch.soup, batch.idField, batch.extField)
        let kinds = Dictionary(uniqueKeysWithValues: changes.map { ($0.entryId, $0.kind) })
        let finalOutcomes = outcomes
        let sentAs = sentRecords
        let gone = compared.serverGone
        let notCompared = compared.uncompared
        return try await access.write { transaction -> Int in
            var refused = 0
            for (entryId, kind) in kinds.sorted(by: { $0.key < $1.key }) {
                guard var record = try transaction.entry(entryId, in: soup)?.record else { continue }
                guard let outcome = finalOutcomes[entryId] else {
                    if let reason = notCompared[entryId] {
                        record[LocalFlags.lastError] = .string(reason)
                        try transaction.upsert(record, into: soup, entryId: entryId)
                        continue
                    }
                    if gone.contains(entryId), kind == .update {
                        record[LocalFlags.lastError] = "deleted on the server; left as is (leaveIfChanged)"
                        try transaction.upsert(record, into: soup, entryId: entryId)
                    }
                    continue
                }
                // Edited locally while its change was on the way (still dirty, and not what was
                // sent): the server has what was sent, not the edit, so the record stays dirty
                // for the next sync up instead of being marked clean with an edit never sent.
                let editedMeanwhile =
                    LocalFlags.isDirty(record) && sentAs[entryId].map { $0 != record } ?? false
                switch outcome {
                case .created(let serverId):
                    try Self.acknowledgeCreate(
                        record, entryId: entryId, serverId: serverId, idField: idField, extField: extField,
                        soup: soup, editedMeanwhile: editedMeanwhile, in: transaction)
                case .updated:
                    if editedMeanwhile { continue }
                    try transaction.upsert(
                        LocalFlags.clean(record, syncId: nil), into: soup, entryId: entryId)
                case .deleted:
                    try transaction.delete(entryIds: [entryId], from: soup)
                case .missingOnServer:
                    if kind == .delete {
                        try transaction.delete(entryIds: [entryId], from: soup)
                    } else {
                        record[LocalFlags.lastError] = "deleted on the server"
                        try transaction.upsert(record, into: soup, entryId: entryId)
                        refused += 1
                    }
                case .failed(let message):
                    record[LocalFlags.lastError] = .string(message)
                    try transaction.upsert(record, into: soup, entryId: entryId)
                    refused += 1
                case .parentMissing:
                    record[LocalFlags.lastError] = "its parent is deleted on the server"
                    try transaction.upsert(record, into: soup, entryId: entryId)
                    refused += 1
                }
            }
            return refused
        }
    }

    /// Gives a created record its server id. A sync down that ran after the server committed
    /// the create and before this answer (a writer killed or a response lost in between) may
    /// have saved the same server record as a second entry: that copy is merged into the
    /// created entry (which keeps its entry id). The copy's content wins when it was written
    /// later — it holds the server's state, or a local edit made to it since, still dirty then.
    ///
    /// - Parameter editedMeanwhile: the record was edited locally after its create was sent: it
    ///   gets its server id and stays dirty, as an update, so the next sync up sends the edit.
    static func acknowledgeCreate(
        _ record: JSONObject, entryId: Int64, serverId: String, idField: String, extField: String,
        soup: String, editedMeanwhile: Bool = false, in transaction: StoreTransaction
    ) throws {
        let copies = try transaction.query(
            SoupQuery(where: [.exact(idField, .string(serverId))]), in: soup
        ).filter { $0.entryId != entryId }
        var acknowledged = record
        acknowledged[idField] = .string(serverId)
        if editedMeanwhile {
            acknowledged = LocalFlags.markUpdated(acknowledged)
            acknowledged[LocalFlags.locallyCreated] = false
        } else {
            acknowledged = LocalFlags.clean(acknowledged, syncId: nil)
        }
        let ours = try transaction.entry(entryId, in: soup)?.lastModified ?? 0
        if let newest = copies.max(by: { $0.lastModified < $1.lastModified }), newest.lastModified >= ours {
            acknowledged = newest.record
            if acknowledged[extField] == nil { acknowledged[extField] = record[extField] }
        }
        try transaction.upsert(acknowledged, into: soup, entryId: entryId)
        try transaction.delete(entryIds: copies.map(\.entryId), from: soup)
    }
}
