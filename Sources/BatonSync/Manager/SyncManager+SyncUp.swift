import BatonStore
import Foundation

extension SyncManager {
    /// Server-managed fields never sent up.
    static let serverFields: Set<String> = [
        "Id", "LastModifiedDate", "SystemModstamp", "CreatedDate", "attributes",
    ]

    /// Sends the soup's local changes batch by batch, checking for a stop before each batch.
    /// Creates go as upserts on a client-generated external id (saved locally first), so a
    /// crash between the server's create and the local update never makes a duplicate. A record
    /// the server refuses keeps its flags and gets `__last_error__`; the sync still ends `done`.
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
        try await persist(counted, onUpdate: onUpdate)
        state = counted
        var processed = 0
        var start = 0
        while start < dirtyIds.count {
            try checkForStop(state.id)
            let batch = Array(dirtyIds[start..<min(dirtyIds.count, start + max(1, target.batchSize))])
            start += batch.count
            if let tree {
                for entryId in batch { try await syncUpTree(entryId, state: state, target: tree) }
            } else {
                try await syncUpBatch(batch, state: state, target: target)
            }
            let before = processed
            processed += batch.count
            // Mobile Sync reports each record's progress below 100% (`done` says the rest), so a
            // batch reports one update per record, once its last progress is persisted.
            let steps = (before + 1...processed).map { $0 * 100 / dirtyIds.count }.filter { $0 < 100 }
            guard let last = steps.last else { continue }
            var next = state
            next.progress = last
            try await writeState(next, through: writer())
            state = next
            for progress in steps {
                var step = next
                step.progress = progress
                notify(step, onUpdate: onUpdate)
            }
        }
    }

    func syncUpBatch(_ entryIds: [Int64], state: SyncState, target: any SyncUpTarget) async throws {
        let soup = state.soupName
        let idField = target.idFieldName
        let extField = target.externalIdFieldName
        // Mobile Sync: the target's own list for each kind of change replaces the sync's.
        let createFields = target.createFieldlist ?? state.options.fieldlist
        let updateFields = target.updateFieldlist ?? state.options.fieldlist
        let access = try writer()

        // 1. Classify; give new records their external id and drop created-then-deleted ones,
        //    locally and durably, before anything reaches the server.
        let (changes, classified) = try await access.write {
            transaction -> ([LocalChange], [Int64: JSONObject]) in
            var changes: [LocalChange] = []
            var sentRecords: [Int64: JSONObject] = [:]
            var neverSent: [Int64] = []
            for entryId in entryIds {
                guard let entry = try transaction.entry(entryId, in: soup), LocalFlags.isDirty(entry.record)
                else { continue }
                var record = entry.record
                let serverId = record[idField]?.stringValue
                if LocalFlags.isDeleted(record) {
                    if serverId == nil || LocalFlags.isCreated(record) {
                        neverSent.append(entryId)
                    } else {
                        changes.append(
                            LocalChange(entryId: entryId, kind: .delete, serverId: serverId, fields: [:]))
                    }
                    continue
                }
                if LocalFlags.isCreated(record) || serverId == nil {
                    if record[extField]?.stringValue == nil {
                        record[extField] = .string(UUID().uuidString)
                        try transaction.upsert(record, into: soup, entryId: entryId)
                    }
                    changes.append(
                        LocalChange(
                            entryId: entryId, kind: .create, serverId: nil,
                            fields: Self.outgoing(record, createFields, extField)))
                } else {
                    changes.append(
                        LocalChange(
                            entryId: entryId, kind: .update, serverId: serverId,
                            fields: Self.outgoing(record, updateFields, nil)))
                }
                sentRecords[entryId] = record
            }
            try transaction.delete(entryIds: neverSent, from: soup)
            return (changes, sentRecords)
        }
        guard !changes.isEmpty else { return }
        // Each record as it was when its change was made, to tell a local edit made meanwhile.
        var sentRecords = classified

        // 2. leaveIfChanged: skip records changed on the server since they were fetched. When
        //    the server's dates cannot be fetched, the sync goes on as Mobile Sync's does: the
        //    records it cannot compare stay dirty for the next sync up, creates go.
        var toSend = changes
        var serverGone: Set<Int64> = []
        var uncompared: [Int64: String] = [:]
        if state.mergeMode == .leaveIfChanged {
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
            toSend = changes.filter { change in
                guard let serverId = change.serverId else { return true }
                if uncompared[change.entryId] != nil { return false }
                guard let serverStamp = serverStamps[serverId] else {
                    serverGone.insert(change.entryId)
                    return change.kind == .delete
                }
                return serverStamp <= (localStamps[change.entryId] ?? Int64.max)
            }
        }
        try checkForStop(state.id)

        // 3. Send; under overwrite, updates of records deleted on the server are recreated.
        var outcomes: [Int64: SyncUpOutcome] = [:]
        let sent = try await target.send(toSend)
        for (change, outcome) in zip(toSend, sent) { outcomes[change.entryId] = outcome }
        if state.mergeMode == .overwrite {
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
                            fields: Self.outgoing(record, createFields, extField)))
                    resent[change.entryId] = record
                }
                return (again, resent)
            }
            sentRecords.merge(resent) { _, new in new }
            if !recreate.isEmpty {
                try checkForStop(state.id)
                for (change, outcome) in zip(recreate, try await target.send(recreate)) {
                    outcomes[change.entryId] = outcome
                }
            }
        }

        // 4. Apply the outcomes locally in one transaction.
        let kinds = Dictionary(uniqueKeysWithValues: changes.map { ($0.entryId, $0.kind) })
        let finalOutcomes = outcomes
        let sentAs = sentRecords
        let gone = serverGone
        let notCompared = uncompared
        try await access.write { transaction in
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
                    }
                case .failed(let message):
                    record[LocalFlags.lastError] = .string(message)
                    try transaction.upsert(record, into: soup, entryId: entryId)
                case .parentMissing:
                    record[LocalFlags.lastError] = "its parent is deleted on the server"
                    try transaction.upsert(record, into: soup, entryId: entryId)
                }
            }
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

    /// The fields to send: no local flags, no server-managed fields, only `fieldlist` if given.
    static func outgoing(_ record: JSONObject, _ fieldlist: [String]?, _ extField: String?) -> JSONObject {
        var fields: JSONObject = [:]
        for (key, value) in record
        where !key.hasPrefix("__") && !key.hasPrefix("_soup") && !serverFields.contains(key) {
            if let fieldlist, !fieldlist.contains(key), key != extField { continue }
            fields[key] = value
        }
        return fields
    }
}
