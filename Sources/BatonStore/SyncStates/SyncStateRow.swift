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
    /// A sync up's records the server refused in its last run (each keeps `__last_error__`).
    public var refusedCount: Int
    /// A sync down's clean resync ghosts: where its next window of the server's deletions
    /// starts (server ms since 1970); nil before a clean has set one.
    public var ghostsCoveredUntil: Int64?
    /// When its last full comparison of ids ran (server ms since 1970).
    public var ghostsFullAt: Int64?

    /// Makes a row from its columns; `id` stays 0 until ``StoreTransaction/insertSyncState(_:)`` assigns one.
    public init(
        id: Int64 = 0, name: String?, type: String, target: JSONObject, options: JSONObject, soupName: String,
        status: String, progress: Int = 0, totalSize: Int = -1, maxTimeStamp: Int64 = -1,
        startTime: Int64? = nil,
        endTime: Int64? = nil, error: String? = nil, modifiedSince: Int64? = -1, runServerTime: Int64? = nil,
        resumeAfterId: String? = nil, refusedCount: Int = 0, ghostsCoveredUntil: Int64? = nil,
        ghostsFullAt: Int64? = nil
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
        self.refusedCount = refusedCount
        self.ghostsCoveredUntil = ghostsCoveredUntil
        self.ghostsFullAt = ghostsFullAt
    }

    /// Reads a stored row, column by column.
    ///
    /// - Throws: ``UnreadableSyncRow`` naming the sync and each column that does not hold what it
    ///   should (never what it holds).
    init(row: Row) throws {
        self = try Self.read(row).get()
    }

    /// The stored row, or what could be read of it and what is wrong.
    static func read(_ row: Row) -> Result<SyncStateRow, UnreadableSyncRow> {
        // The id is the table's INTEGER PRIMARY KEY (SQLite's rowid): always an integer.
        let id: Int64 = row["id"]
        var problems: [String] = []
        // GRDB's own decoding error would quote the row: the problem names the column only.
        func column<Value: DatabaseValueConvertible>(_ name: String, _ kind: String, else fallback: Value)
            -> Value
        {
            do {
                return try row.decode(Value.self, forColumn: name)
            } catch {
                problems.append("a \(name) that is not \(kind)")
                return fallback
            }
        }
        func object(_ name: String, _ what: String) -> JSONObject {
            let text: String = column(name, "text", else: "{}")
            do {
                return try JSONObject(parsingObject: text)
            } catch {
                problems.append("\(what) not a JSON object (\(error))")
                return [:]
            }
        }
        let name: String? = column("name", "text", else: nil)
        let type: String = column("type", "text", else: "?")
        let target = object("target", "a target that is")
        let options = object("options", "options that are")
        let soupName: String = column("soupName", "text", else: "?")
        let status: String = column("status", "text", else: "?")
        let progress: Int = column("progress", "an integer", else: 0)
        let totalSize: Int = column("totalSize", "an integer", else: -1)
        let maxTimeStamp: Int64 = column("maxTimeStamp", "an integer", else: -1)
        let startTime: Int64? = column("startTime", "an integer", else: nil)
        let endTime: Int64? = column("endTime", "an integer", else: nil)
        let error: String? = column("error", "text", else: nil)
        let modifiedSince: Int64? = column("modifiedSince", "an integer", else: nil)
        let runServerTime: Int64? = column("runServerTime", "an integer", else: nil)
        let resumeAfterId: String? = column("resumeAfterId", "text", else: nil)
        let refusedCount: Int = column("refusedCount", "an integer", else: 0)
        let ghostsCoveredUntil: Int64? = column("ghostsCoveredUntil", "an integer", else: nil)
        let ghostsFullAt: Int64? = column("ghostsFullAt", "an integer", else: nil)
        guard problems.isEmpty else {
            return .failure(
                UnreadableSyncRow(
                    id: id, name: name, type: type, status: status, soupName: soupName, error: error,
                    problem: "has " + problems.joined(separator: " and ")))
        }
        return .success(
            SyncStateRow(
                id: id, name: name, type: type, target: target, options: options, soupName: soupName,
                status: status, progress: progress, totalSize: totalSize, maxTimeStamp: maxTimeStamp,
                startTime: startTime, endTime: endTime, error: error, modifiedSince: modifiedSince,
                runServerTime: runServerTime, resumeAfterId: resumeAfterId, refusedCount: refusedCount,
                ghostsCoveredUntil: ghostsCoveredUntil, ghostsFullAt: ghostsFullAt))
    }
}

extension StoreReader {
    /// Every sync state (only those with `status`, when given), by id.
    ///
    /// - Throws: ``UnreadableSyncRow`` for the first row that cannot be read
    ///   (``syncStateEntries(status:)`` gives the others too).
    public func syncStates(status: String? = nil) throws -> [SyncStateRow] {
        try syncStateEntries(status: status).map { try $0.get() }
    }

    /// Every sync state (only those with `status`, when given), by id; a row that cannot be read
    /// is in its place as an ``UnreadableSyncRow``, so one bad row hides no other.
    ///
    /// - Throws: `StoreError` only when the store cannot be read.
    public func syncStateEntries(status: String? = nil) throws -> [Result<SyncStateRow, UnreadableSyncRow>] {
        if let status {
            return try Row.fetchAll(
                cached("SELECT * FROM sync_state WHERE status = ? ORDER BY id"), arguments: [status]
            )
            .map(SyncStateRow.read)
        }
        return try Row.fetchAll(cached("SELECT * FROM sync_state ORDER BY id")).map(SyncStateRow.read)
    }

    /// The sync state with this id, or `nil`.
    ///
    /// - Throws: ``UnreadableSyncRow`` when its row cannot be read.
    public func syncState(id: Int64) throws -> SyncStateRow? {
        try syncStateEntry(id: id)?.get()
    }

    /// The sync state with this name, or `nil`.
    ///
    /// - Throws: ``UnreadableSyncRow`` when its row cannot be read.
    public func syncState(name: String) throws -> SyncStateRow? {
        try syncStateEntry(name: name)?.get()
    }

    /// The sync state with this id, or what could be read of it; `nil` when there is none.
    public func syncStateEntry(id: Int64) throws -> Result<SyncStateRow, UnreadableSyncRow>? {
        try Row.fetchOne(cached("SELECT * FROM sync_state WHERE id = ?"), arguments: [id]).map(
            SyncStateRow.read)
    }

    /// The sync state with this name, or what could be read of it; `nil` when there is none.
    public func syncStateEntry(name: String) throws -> Result<SyncStateRow, UnreadableSyncRow>? {
        try Row.fetchOne(cached("SELECT * FROM sync_state WHERE name = ?"), arguments: [name])
            .map(SyncStateRow.read)
    }

    /// Counts of sync states by status (as stored: one this version does not know counts too).
    public func syncStatusCounts() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        // As text: a status written by hand as a blob is counted, not a decoding crash.
        let sql = "SELECT CAST(status AS TEXT) AS status, count(*) AS n FROM sync_state GROUP BY 1"
        for row in try Row.fetchAll(db, sql: sql) {
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
                    maxTimeStamp, startTime, endTime, error, modifiedSince, runServerTime, resumeAfterId,
                    refusedCount, ghostsCoveredUntil, ghostsFullAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                state.name, state.type, state.target.jsonString, state.options.jsonString, state.soupName,
                state.status,
                state.progress, state.totalSize, state.maxTimeStamp, state.startTime, state.endTime,
                state.error, state.modifiedSince, state.runServerTime, state.resumeAfterId,
                state.refusedCount, state.ghostsCoveredUntil, state.ghostsFullAt,
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
                modifiedSince = ?, runServerTime = ?, resumeAfterId = ?, refusedCount = ?,
                ghostsCoveredUntil = ?, ghostsFullAt = ?
            WHERE id = ?
            """
        ).execute(
            arguments: [
                state.name, state.type, state.target.jsonString, state.options.jsonString, state.soupName,
                state.status,
                state.progress, state.totalSize, state.maxTimeStamp, state.startTime, state.endTime,
                state.error, state.modifiedSince, state.runServerTime, state.resumeAfterId,
                state.refusedCount, state.ghostsCoveredUntil, state.ghostsFullAt,
                state.id,
            ])
        guard db.changesCount > 0 else {
            throw StoreError(.unknownSync, "sync \(state.id) no longer exists")
        }
    }

    /// Sets a sync's status, error and end time, touching no other column: how the writer sets
    /// aside a sync whose row it cannot read whole (no ``SyncStateRow`` of it can be written back).
    /// Returns whether the row exists.
    @discardableResult
    public func setSyncStatus(id: Int64, status: String, error: String, endTime: Int64) throws -> Bool {
        try db.execute(
            sql: "UPDATE sync_state SET status = ?, error = ?, endTime = ? WHERE id = ?",
            arguments: [status, error, endTime, id])
        return db.changesCount > 0
    }

    /// Sets a sync down's clean resync ghosts marks, touching no other column (a clean runs
    /// beside the sync's own state changes, in the transaction that deletes its ghosts).
    ///
    /// - Throws: `unknownSync` when the sync was deleted.
    public func setGhostCleaningMarks(id: Int64, coveredUntil: Int64?, fullAt: Int64?) throws {
        try db.execute(
            sql: "UPDATE sync_state SET ghostsCoveredUntil = ?, ghostsFullAt = ? WHERE id = ?",
            arguments: [coveredUntil, fullAt, id])
        guard db.changesCount > 0 else { throw StoreError(.unknownSync, "sync \(id) no longer exists") }
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
