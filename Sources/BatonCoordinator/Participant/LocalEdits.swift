import BatonStore

/// An app's own edits, inside one transaction of ``Participant/write(waitingUpTo:_:)``: records
/// created, updated or deleted here carry Mobile Sync's local flags, so the next sync up sends
/// them. Reads see the transaction's own writes. Valid only inside the closure it is given to.
public struct LocalEdits {
    /// The transaction underneath, for reads (and for writes that must not be marked local).
    public let transaction: StoreTransaction

    init(_ transaction: StoreTransaction) {
        self.transaction = transaction
    }

    /// Creates `record` in `soup`, marked locally created.
    @discardableResult
    public func create(_ record: JSONObject, in soup: String) throws -> SoupEntry {
        try transaction.upsert(LocalFlags.markCreated(record), into: soup)
    }

    /// Replaces entry `entryId` of `soup` with `change` applied to it, marked locally updated
    /// (a record created locally and not synced yet stays marked created).
    ///
    /// - Throws: `entryNotFound` when there is no such entry.
    @discardableResult
    public func update(
        _ entryId: Int64, in soup: String, _ change: (inout JSONObject) throws -> Void
    ) throws -> SoupEntry {
        guard var record = try transaction.entry(entryId, in: soup)?.record else {
            throw StoreError(.entryNotFound, "no entry \(entryId) in soup '\(soup)'")
        }
        try change(&record)
        return try transaction.upsert(LocalFlags.markUpdated(record), into: soup, entryId: entryId)
    }

    /// Marks entry `entryId` of `soup` locally deleted (the next sync up deletes it on the
    /// server, then here).
    ///
    /// - Throws: `entryNotFound` when there is no such entry.
    @discardableResult
    public func delete(_ entryId: Int64, in soup: String) throws -> SoupEntry {
        guard let record = try transaction.entry(entryId, in: soup)?.record else {
            throw StoreError(.entryNotFound, "no entry \(entryId) in soup '\(soup)'")
        }
        return try transaction.upsert(LocalFlags.markDeleted(record), into: soup, entryId: entryId)
    }
}
