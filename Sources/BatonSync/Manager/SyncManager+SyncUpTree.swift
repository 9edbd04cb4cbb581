import BatonStore
import Foundation

extension SyncManager {
    /// The parents to send, in entry order: the dirty ones, and those with a dirty child.
    static func dirtyTrees(_ reader: StoreReader, soup: String, target: any TreeSyncUpTarget) throws
        -> [Int64]
    {
        var ids = Set(try reader.dirtyEntryIds(in: soup))
        let children = target.childrenSoup
        if try reader.soupIfExists(children.soupName) != nil {
            for child in try reader.dirtyEntries(in: children.soupName) {
                guard let parentId = child.record[children.parentIdFieldName], !parentId.isNull,
                    let parent = try reader.entry(where: target.idFieldName, equals: parentId, in: soup)
                else { continue }
                ids.insert(parent.entryId)
            }
        }
        return ids.sorted()
    }

    /// What one tree's sync up works with.
    struct TreeSync: Sendable {
        var parentEntryId: Int64
        var soup: String
        var children: ChildrenSoup
        var idField: String
        var extField: String
        var masterDetail: Bool
        var overwrite: Bool
        /// The one re-send after the server deleted a record the sync updates.
        var again: Bool
        var parentCreateFields: [String]?
        var parentUpdateFields: [String]?
        var childCreateFields: [String]?
        var childUpdateFields: [String]?

        init(_ parentEntryId: Int64, state: SyncState, target: any TreeSyncUpTarget, again: Bool) {
            self.parentEntryId = parentEntryId
            soup = state.soupName
            children = target.childrenSoup
            idField = target.idFieldName
            extField = target.externalIdFieldName
            masterDetail = target.deletesChildrenWithParent
            overwrite = state.mergeMode == .overwrite
            self.again = again
            parentCreateFields = target.createFieldlist ?? state.options.fieldlist
            parentUpdateFields = target.updateFieldlist ?? state.options.fieldlist
            childCreateFields = target.childrenCreateFieldlist
            childUpdateFields = target.childrenUpdateFieldlist
        }
    }

    /// Sends one parent with its children and saves what the server did to both soups in one
    /// transaction. As for single records, creates are upserts on a client-generated external
    /// id saved before sending, so a lost answer never makes a duplicate, and a record edited
    /// while on the way stays dirty.
    ///
    /// - Parameter again: this is the one re-send after the server deleted a record the sync
    ///   updates (`overwrite` recreates it, as Mobile Sync does).
    ///
    /// - Returns: the number of the tree's records the server refused (each left with
    ///   `__last_error__`).
    func syncUpTree(
        _ parentEntryId: Int64, state: SyncState, target: any TreeSyncUpTarget, again: Bool = false
    ) async throws -> Int {
        let tree = TreeSync(parentEntryId, state: state, target: target, again: again)
        let access = try writer()
        guard let prepared = try await prepareTree(tree, target: target, access: access),
            prepared.parentChange != nil || !prepared.children.isEmpty
        else { return 0 }
        if state.mergeMode == .leaveIfChanged {
            guard try await treeIsCurrent(prepared, tree, state: state, target: target, access: access) else {
                return 0
            }
        }
        try checkForStop(state.id)
        let outcome = try await target.sendTree(
            TreeChange(
                parent: prepared.parentChange, parentServerId: prepared.parentServerId,
                children: prepared.children))
        let (recreate, refused) = try await access.write { transaction -> (Bool, Int) in
            let parent = try Self.saveParentOutcome(prepared, outcome, tree, in: transaction)
            let children = try Self.saveChildrenOutcomes(
                prepared, outcome, parentServerId: parent.parentServerId, tree, in: transaction)
            return (parent.recreate || children.recreate, parent.refused + children.refused)
        }
        guard recreate else { return refused }
        return try await refused + syncUpTree(parentEntryId, state: state, target: target, again: true)
    }

    /// The tree as it is now, with the changes to send; created records get their external id,
    /// durably, first. Nil when the parent is gone, or was never on the server and is deleted
    /// (then it and its children go, locally only).
    func prepareTree(_ tree: TreeSync, target: any TreeSyncUpTarget, access: WriteAccess) async throws
        -> PreparedTree?
    {
        let (parentEntryId, soup, children) = (tree.parentEntryId, tree.soup, tree.children)
        let (idField, extField, masterDetail) = (tree.idField, tree.extField, tree.masterDetail)
        let (parentCreateFields, parentUpdateFields) = (tree.parentCreateFields, tree.parentUpdateFields)
        let (childCreateFields, childUpdateFields) = (tree.childCreateFields, tree.childUpdateFields)
        return try await access.write { transaction -> PreparedTree? in
            guard var parent = try transaction.entry(parentEntryId, in: soup)?.record else { return nil }
            let localId = parent[idField]
            var childEntries =
                try transaction.soupIfExists(children.soupName) == nil || localId == nil
                || localId?.isNull == true
                ? []
                : try transaction.query(
                    SoupQuery(where: [.exact(children.parentIdFieldName, localId!)]), in: children.soupName)
            let parentCreated = LocalFlags.isCreated(parent) || localId?.stringValue == nil
            // A parent never on the server is sent (created) whether or not it is flagged dirty.
            let parentPlan = LocalChangePlan.classify(
                parent, idField: idField, externalIdField: extField, takenAlong: parentCreated)
            switch parentPlan {
            case .drop:
                // Never on the server: it and its children go, locally only.
                try transaction.delete(entryIds: [parentEntryId], from: soup)
                try transaction.delete(entryIds: childEntries.map(\.entryId), from: children.soupName)
                return nil
            case .create(needsExternalId: true):
                parent[extField] = .string(UUID().uuidString)
                try transaction.upsert(parent, into: soup, entryId: parentEntryId)
            case .none, .create, .update, .delete: break
            }
            let parentChange = parentPlan.change(
                entryId: parentEntryId, record: parent, externalIdField: extField,
                createFields: parentCreateFields, updateFields: parentUpdateFields)
            var childChanges: [LocalChange] = []
            var sentChildren: [Int64: JSONObject] = [:]
            if !(masterDetail && parentChange?.kind == .delete) {
                for index in childEntries.indices {
                    var child = childEntries[index].record
                    let entryId = childEntries[index].entryId
                    // A created parent takes all its children along, to link them to its new id.
                    let plan = LocalChangePlan.classify(
                        child, idField: children.idFieldName, externalIdField: extField,
                        takenAlong: parentCreated)
                    switch plan {
                    case .none: continue
                    case .drop:
                        try transaction.delete(entryIds: [entryId], from: children.soupName)
                        continue
                    case .create(needsExternalId: true):
                        child[extField] = .string(UUID().uuidString)
                        try transaction.upsert(child, into: children.soupName, entryId: entryId)
                        childEntries[index].record = child
                    case .create, .update, .delete: break
                    }
                    guard
                        var change = plan.change(
                            entryId: entryId, record: child, externalIdField: extField,
                            createFields: childCreateFields, updateFields: childUpdateFields)
                    else { continue }
                    change.fields[children.parentIdFieldName] = nil  // the target links it to the parent
                    childChanges.append(change)
                    sentChildren[entryId] = child
                }
            }
            return PreparedTree(
                parent: parent, parentChange: parentChange,
                parentServerId: parentCreated ? nil : localId?.stringValue,
                children: childChanges, sentChildren: sentChildren,
                childStamps: Self.serverStamps(of: childEntries, children: children, target: target))
        }
    }

    /// Each child the server has (not created locally): its server id, stamp and whether it is
    /// deleted locally, for leaveIfChanged's check.
    static func serverStamps(of entries: [SoupEntry], children: ChildrenSoup, target: any TreeSyncUpTarget)
        -> [(String, Int64?, Bool)]
    {
        entries.compactMap { entry in
            LocalFlags.isCreated(entry.record)
                ? nil
                : entry.record[children.idFieldName]?.stringValue.map {
                    (
                        $0, target.childModificationTimeStamp(of: entry.record),
                        LocalFlags.isDeleted(entry.record)
                    )
                }
        }
    }

    /// leaveIfChanged: whether the tree may go. The whole tree waits when the server changed any
    /// of it since it was fetched (Mobile Sync's rule: every local child counts, changed or not);
    /// when the server's dates cannot be fetched, the tree is marked with why and waits.
    func treeIsCurrent(
        _ prepared: PreparedTree, _ tree: TreeSync, state: SyncState, target: any TreeSyncUpTarget,
        access: WriteAccess
    ) async throws -> Bool {
        let (soup, children, masterDetail) = (tree.soup, tree.children, tree.masterDetail)
        guard let parentId = prepared.parentServerId else { return true }
        let remote: [String: Int64]
        do {
            remote = try await target.fetchTreeTimeStamps(parentId: parentId)
        } catch {
            try checkForStop(state.id)
            try Task.checkCancellation()
            try await markTree(
                prepared, soup: soup, children: children, access: access,
                error:
                    "not sent: the server's modification dates could not be fetched (leaveIfChanged): \(error)"
            )
            return false
        }
        var local = [
            (
                parentId, target.modificationTimeStamp(of: prepared.parent),
                LocalFlags.isDeleted(prepared.parent)
            )
        ]
        local += prepared.childStamps.map {
            ($0.0, $0.1, $0.2 || (masterDetail && LocalFlags.isDeleted(prepared.parent)))
        }
        let newer = local.allSatisfy { id, stamp, deleted in
            guard let stamp else { return true }
            guard let server = remote[id] else { return deleted }
            return stamp >= server
        }
        return newer
    }

    /// Saves what the server did with the parent; returns the parent's server id now, whether
    /// the tree must be sent again (the server deleted the parent: under overwrite it is created
    /// again, once), and whether the server refused it (1) or not (0).
    static func saveParentOutcome(
        _ prepared: PreparedTree, _ outcome: TreeOutcome, _ tree: TreeSync, in transaction: StoreTransaction
    ) throws -> (parentServerId: String?, recreate: Bool, refused: Int) {
        let (parentEntryId, soup, children) = (tree.parentEntryId, tree.soup, tree.children)
        let (idField, extField, masterDetail) = (tree.idField, tree.extField, tree.masterDetail)
        let (overwrite, again) = (tree.overwrite, tree.again)
        var recreate = false
        var refused = 0
        var parentServerId = prepared.parentServerId
        if let change = prepared.parentChange, let result = outcome.parent,
            var record = try transaction.entry(parentEntryId, in: soup)?.record
        {
            let editedMeanwhile = record != prepared.parent
            switch result {
            case .created(let serverId):
                parentServerId = serverId
                try Self.acknowledgeCreate(
                    record, entryId: parentEntryId, serverId: serverId, idField: idField,
                    extField: extField,
                    soup: soup, editedMeanwhile: editedMeanwhile, in: transaction)
            case .updated:
                if !editedMeanwhile {
                    try transaction.upsert(
                        LocalFlags.clean(record, syncId: nil), into: soup, entryId: parentEntryId)
                }
            case .deleted:
                try Self.deleteParent(
                    parentEntryId, record, soup: soup, children: children, masterDetail: masterDetail,
                    idField: idField, in: transaction)
            case .missingOnServer where change.kind == .delete:
                try Self.deleteParent(
                    parentEntryId, record, soup: soup, children: children, masterDetail: masterDetail,
                    idField: idField, in: transaction)
            case .missingOnServer:
                if overwrite, !again {
                    try Self.markForRecreation(
                        parentEntryId, soup: soup, children: children, masterDetail: masterDetail,
                        idField: idField, in: transaction)
                    recreate = true
                } else {
                    record[LocalFlags.lastError] = "deleted on the server"
                    try transaction.upsert(record, into: soup, entryId: parentEntryId)
                    refused = 1
                }
            case .failed(let message):
                record[LocalFlags.lastError] = .string(message)
                try transaction.upsert(record, into: soup, entryId: parentEntryId)
                refused = 1
            case .parentMissing:
                record[LocalFlags.lastError] = "refused: a record it refers to is deleted on the server"
                try transaction.upsert(record, into: soup, entryId: parentEntryId)
                refused = 1
            }
        }
        return (parentServerId, recreate, refused)
    }

    /// Saves what the server did with each child; returns whether the tree must be sent again,
    /// and how many children the server refused.
    static func saveChildrenOutcomes(
        _ prepared: PreparedTree, _ outcome: TreeOutcome, parentServerId: String?, _ tree: TreeSync,
        in transaction: StoreTransaction
    ) throws -> (recreate: Bool, refused: Int) {
        let (parentEntryId, soup, children) = (tree.parentEntryId, tree.soup, tree.children)
        let (idField, masterDetail) = (tree.idField, tree.masterDetail)
        let (overwrite, again) = (tree.overwrite, tree.again)
        var recreate = false
        var refused = 0
        for (change, result) in zip(prepared.children, outcome.children) {
            guard var record = try transaction.entry(change.entryId, in: children.soupName)?.record else {
                continue
            }
            let editedMeanwhile = prepared.sentChildren[change.entryId].map { $0 != record } ?? false
            switch result {
            case .created(let serverId):
                record[children.idFieldName] = .string(serverId)
                if let parentServerId { record[children.parentIdFieldName] = .string(parentServerId) }
                record =
                    editedMeanwhile
                    ? {
                        var r = LocalFlags.markUpdated(record); r[LocalFlags.locallyCreated] = false;
                        return r
                    }()
                    : LocalFlags.clean(record, syncId: nil)
                try transaction.upsert(record, into: children.soupName, entryId: change.entryId)
            case .updated:
                if let parentServerId { record[children.parentIdFieldName] = .string(parentServerId) }
                if !editedMeanwhile { record = LocalFlags.clean(record, syncId: nil) }
                try transaction.upsert(record, into: children.soupName, entryId: change.entryId)
            case .deleted:
                try transaction.delete(entryIds: [change.entryId], from: children.soupName)
            case .missingOnServer where change.kind == .delete:
                try transaction.delete(entryIds: [change.entryId], from: children.soupName)
            case .missingOnServer:
                if overwrite, !again {
                    try transaction.upsert(
                        LocalFlags.markCreated(record), into: children.soupName, entryId: change.entryId)
                    recreate = true
                } else {
                    record[LocalFlags.lastError] = "deleted on the server"
                    try transaction.upsert(record, into: children.soupName, entryId: change.entryId)
                    refused += 1
                }
            case .parentMissing:
                // The parent is gone on the server: under overwrite it is created again.
                if overwrite, !again {
                    try Self.markForRecreation(
                        parentEntryId, soup: soup, children: children, masterDetail: masterDetail,
                        idField: idField, in: transaction)
                    recreate = true
                } else {
                    record[LocalFlags.lastError] = "its parent is deleted on the server"
                    try transaction.upsert(record, into: children.soupName, entryId: change.entryId)
                    refused += 1
                }
            case .failed(let message):
                record[LocalFlags.lastError] = .string(message)
                try transaction.upsert(record, into: children.soupName, entryId: change.entryId)
                refused += 1
            }
        }
        return (recreate, refused)
    }

    /// Marks a parent the server deleted to be created again, with its local children: created
    /// too under master-detail (the server deleted them with it), updated under a lookup (to
    /// link them to the new parent). Mobile Sync's rule.
    static func markForRecreation(
        _ parentEntryId: Int64, soup: String, children: ChildrenSoup, masterDetail: Bool, idField: String,
        in transaction: StoreTransaction
    ) throws {
        guard let parent = try transaction.entry(parentEntryId, in: soup)?.record else { return }
        if !LocalFlags.isCreated(parent) {
            try transaction.upsert(LocalFlags.markCreated(parent), into: soup, entryId: parentEntryId)
        }
        guard let id = parent[idField], try transaction.soupIfExists(children.soupName) != nil else { return }
        for child in try transaction.query(
            SoupQuery(where: [.exact(children.parentIdFieldName, id)]), in: children.soupName)
        where !LocalFlags.isDeleted(child.record) && !LocalFlags.isCreated(child.record) {
            let marked =
                masterDetail ? LocalFlags.markCreated(child.record) : LocalFlags.markUpdated(child.record)
            try transaction.upsert(marked, into: children.soupName, entryId: child.entryId)
        }
    }

    /// Deletes a parent deleted on the server, with its local children when the server deletes
    /// them too (master-detail).
    static func deleteParent(
        _ entryId: Int64, _ record: JSONObject, soup: String, children: ChildrenSoup, masterDetail: Bool,
        idField: String, in transaction: StoreTransaction
    ) throws {
        try transaction.delete(entryIds: [entryId], from: soup)
        guard masterDetail, let id = record[idField], try transaction.soupIfExists(children.soupName) != nil
        else { return }
        let orphans = try transaction.query(
            SoupQuery(where: [.exact(children.parentIdFieldName, id)]), in: children.soupName)
        try transaction.delete(entryIds: orphans.map(\.entryId), from: children.soupName)
    }

    /// Sets `error` on a tree's records that were to be sent.
    func markTree(
        _ tree: PreparedTree, soup: String, children: ChildrenSoup, access: WriteAccess, error: String
    ) async throws {
        let parentEntryId = tree.parentChange?.entryId
        let childIds = tree.children.map(\.entryId)
        try await access.write { transaction in
            if let parentEntryId, var record = try transaction.entry(parentEntryId, in: soup)?.record {
                record[LocalFlags.lastError] = .string(error)
                try transaction.upsert(record, into: soup, entryId: parentEntryId)
            }
            for entryId in childIds {
                guard var record = try transaction.entry(entryId, in: children.soupName)?.record else {
                    continue
                }
                record[LocalFlags.lastError] = .string(error)
                try transaction.upsert(record, into: children.soupName, entryId: entryId)
            }
        }
    }
}

/// A tree read and prepared for sending.
struct PreparedTree: Sendable {
    var parent: JSONObject
    var parentChange: LocalChange?
    var parentServerId: String?
    var children: [LocalChange]
    /// Each sent child as it was, to tell a local edit made meanwhile.
    var sentChildren: [Int64: JSONObject]
    /// Every local child with a server id: its stamp and whether it is deleted locally.
    var childStamps: [(String, Int64?, Bool)]
}
