import GRDB

/// One row of the sync-state table, as stored. `BatonSync` gives it meaning (`SyncState`); the
/// store only keeps it, so any process can read any sync's state at any time.
public struct SyncStateRow: Sendable, Hashable {
    /// The store-assigned id (0 before the row is inserted).
    public var id: Int64
    /// The sync's name, unique in the store, or nil for an unnamed sync.
    public var name: String?
    /// `syncDown` or `syncUp`.
    public var type: String
    /// The target as JSON.
    public var target: JSONObject
    /// The options (merge mode, field list…) as JSON.
    public var options: JSONObject
    /// The soup the sync reads from or writes to.
    public var soupName: String
    /// `new`, `running`, `stopped`, `failed` or `done`.
    public var status: String
    /// Percent, 0–100.
    public var progress: Int
    /// Records the server reported for the run, -1 when unknown.
    public var totalSize: Int
    /// The newest `LastModifiedDate` fetched, in ms since 1970; -1 when none.
    public var maxTimeStamp: Int64
    /// Start of the last run, in ms since 1970.
    public var startTime: Int64?
    /// End of the last run, in ms since 1970.
    public var endTime: Int64?
    /// The last failure, if any (never record contents).
    public var error: String?
    /// A sync down's lower bound (ms since 1970): its next run fetches the records stamped at or
    /// after it; -1: every record; nil: the row was written by a Baton from before positions.
    public var modifiedSince: Int64?
    /// The server's clock when the run in progress started (ms since 1970); -1: unknown; nil: no
    /// run in progress.
    public var runServerTime: Int64?
    /// The id of the last record the run in progress saved, when its fetch is ordered by id.
    public var resumeAfterId: String?

    /// Makes a row from its columns; `id` stays 0 until ``StoreTransaction/insertSyncState(_:)`` assigns one.
    public init(
        id: Int64 = 0, name: String?, type: String, target: JSONObject, options: JSONObject, soupName: String,
        status: String, progress: Int = 0, totalSize: Int = -1, maxTimeStamp: Int64 = -1,
        startTime: Int64? = nil,
        endTime: Int64? = nil, error: String? = nil, modifiedSince: Int64? = -1, runServerTime: Int64? = nil,
        resumeAfterId: String? = nil
    ) {
        self.id = id
        self.name = name
        self.type = type
        self.target = target
        self.options = options
        self.soupName = soupName
        self.status = status
        self.progress = progress
        self.totalSize = totalSize
        self.maxTimeStamp = maxTimeStamp
        self.startTime = startTime
        self.endTime = endTime
        self.error = error
        self.modifiedSince = modifiedSince
        self.runServerTime = runServerTime
        self.resumeAfterId = resumeAfterId
    }

    init(row: Row) throws {
        self.init(
            id: row["id"], name: row["name"], type: row["type"],
            target: try JSONObject(parsingObject: row["target"]),
            options: try JSONObject(parsingObject: row["options"]),
            soupName: row["soupName"], status: row["status"], progress: row["progress"],
            totalSize: row["totalSize"],
            maxTimeStamp: row["maxTimeStamp"], startTime: row["startTime"], endTime: row["endTime"],
            error: row["error"], modifiedSince: row["modifiedSince"], runServerTime: row["runServerTime"],
            resumeAfterId: row["resumeAfterId"])
    }
}

extension StoreReader {
    /// Every sync state, by id.
    public func syncStates(status: String? = nil) throws -> [SyncStateRow] {
        if let status {
            return try Row.fetchAll(
                cached("SELECT * FROM sync_state WHERE status = ? ORDER BY id"), arguments: [status]
            )
            .map(SyncStateRow.init(row:))
        }
        return try Row.fetchAll(cached("SELECT * FROM sync_state ORDER BY id")).map(SyncStateRow.init(row:))
    }

    /// The sync state with this id, or `nil`.
    public func syncState(id: Int64) throws -> SyncStateRow? {
        try Row.fetchOne(cached("SELECT * FROM sync_state WHERE id = ?"), arguments: [id]).map(
            SyncStateRow.init(row:))
    }

    /// The sync state with this name, or `nil`.
    public func syncState(name: String) throws -> SyncStateRow? {
        try Row.fetchOne(cached("SELECT * FROM sync_state WHERE name = ?"), arguments: [name])
            .map(SyncStateRow.init(row:))
    }

    /// Counts of sync states by status.
    public func syncStatusCounts() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT status, count(*) AS n FROM sync_state GROUP BY status") {
            counts[row["status"]] = row["n"]
        }
        return counts
    }
}

extension StoreTransaction {
    /// Inserts a new sync state and returns it with its id.
    ///
    /// - Throws: `duplicateSyncName` when the name is taken.
    public func insertSyncState(_ state: SyncStateRow) throws -> SyncStateRow {
        if let name = state.name, try syncState(name: name) != nil {
            throw StoreError(
                .duplicateSyncName, "a sync named '\(name)' already exists; reSync it or pick another name")
        }
        try db.execute(
            sql: """
                INSERT INTO sync_state (name, type, target, options, soupName, status, progress, totalSize,
                    maxTimeStamp, startTime, endTime, error, modifiedSince, runServerTime, resumeAfterId)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                state.name, state.type, state.target.jsonString, state.options.jsonString, state.soupName,
                state.status,
                state.progress, state.totalSize, state.maxTimeStamp, state.startTime, state.endTime,
                state.error, state.modifiedSince, state.runServerTime, state.resumeAfterId,
            ])
        var inserted = state
        inserted.id = db.lastInsertedRowID
        return inserted
    }

    /// Writes every column of an existing sync state.
    ///
    /// - Throws: `unknownSync` when it was deleted.
    public func updateSyncState(_ state: SyncStateRow) throws {
        try cached(
            """
            UPDATE sync_state SET name = ?, type = ?, target = ?, options = ?, soupName = ?, status = ?,
                progress = ?, totalSize = ?, maxTimeStamp = ?, startTime = ?, endTime = ?, error = ?,
                modifiedSince = ?, runServerTime = ?, resumeAfterId = ?
            WHERE id = ?
            """
        ).execute(
            arguments: [
                state.name, state.type, state.target.jsonString, state.options.jsonString, state.soupName,
                state.status,
                state.progress, state.totalSize, state.maxTimeStamp, state.startTime, state.endTime,
                state.error, state.modifiedSince, state.runServerTime, state.resumeAfterId, state.id,
            ])
        guard db.changesCount > 0 else {
            throw StoreError(.unknownSync, "sync \(state.id) no longer exists")
        }
    }

    /// Deletes a sync state; returns whether it existed.
    @discardableResult
    public func deleteSyncState(id: Int64) throws -> Bool {
        try db.execute(sql: "DELETE FROM sync_state WHERE id = ?", arguments: [id])
        return db.changesCount > 0
    }

    /// Sets every sync with status `from` to `to`; returns their ids.
    public func changeSyncStatus(from: String, to: String) throws -> [Int64] {
        let ids = try Int64.fetchAll(
            db, sql: "SELECT id FROM sync_state WHERE status = ? ORDER BY id", arguments: [from])
        try db.execute(sql: "UPDATE sync_state SET status = ? WHERE status = ?", arguments: [to, from])
        return ids
    }
}
