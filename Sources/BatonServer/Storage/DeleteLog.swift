import BatonJSON
import BatonLocking
import GRDB
import SOQL

/// Salesforce's delete log, as `sObject Get Deleted` reads it: each deleted id with its
/// `deletedDate` (the deleting transaction's stamp), kept for a retention (15 days on
/// Salesforce) and purged past it, the newest purged date answered as `earliestDateAvailable`.
///
/// Harder on a client than a list of ids, as Salesforce is:
/// - the seconds of `start` and `end` are ignored (a window is whole minutes), and `start` must
///   precede `end` by more than a minute, else `INVALID_REPLICATION_DATE`;
/// - a `start` before the retention, or before the log's purge, is `INVALID_REPLICATION_DATE`;
/// - `latestDateCovered` stops at the oldest write still in flight (stamped, not committed), so
///   a delete that commits late is answered by the next window, never lost between two;
/// - more than 600,000 ids is `EXCEEDED_ID_LIMIT`.
struct DeleteLog {
    /// What one call answers.
    struct Answer: Sendable, Equatable {
        var deleted: [(id: String, date: Int64)]
        var earliestDateAvailable: Int64
        var latestDateCovered: Int64

        static func == (lhs: Answer, rhs: Answer) -> Bool {
            lhs.deleted.map(\.id) == rhs.deleted.map(\.id)
                && lhs.deleted.map(\.date) == rhs.deleted.map(\.date)
                && lhs.earliestDateAvailable == rhs.earliestDateAvailable
                && lhs.latestDateCovered == rhs.latestDateCovered
        }

        var json: JSONValue {
            [
                "deletedRecords": .array(
                    deleted.map {
                        [
                            "id": .string($0.id),
                            "deletedDate": .string(DateTimeLiteral.format(milliseconds: $0.date)),
                        ]
                    }),
                "earliestDateAvailable": .string(DateTimeLiteral.format(milliseconds: earliestDateAvailable)),
                "latestDateCovered": .string(DateTimeLiteral.format(milliseconds: latestDateCovered)),
            ]
        }
    }

    /// Salesforce's limit on the ids of one answer.
    static let idLimit = 600_000

    /// `millis` with its seconds (and milliseconds) dropped.
    static func minute(_ millis: Int64) -> Int64 {
        let floored = millis - ((millis % 60_000) + 60_000) % 60_000
        return floored
    }

    static func invalidDate(_ message: String) -> SalesforceError {
        SalesforceError(status: 400, "INVALID_REPLICATION_DATE", message)
    }
}

/// Stamps of writes begun and not committed yet (a commit held back by a fault), so the delete
/// log answers no window past the oldest.
final class InFlightStamps: Sendable {
    private let stamps = Locked<[Int64: Int]>([:])

    /// Runs `body` with `stamp` counted as in flight.
    func during<T>(_ stamp: Int64?, _ body: () async throws -> T) async rethrows -> T {
        guard let stamp else { return try await body() }
        stamps.withLock { $0[stamp, default: 0] += 1 }
        defer {
            stamps.withLock {
                $0[stamp, default: 1] -= 1
                if $0[stamp] == 0 { $0[stamp] = nil }
            }
        }
        return try await body()
    }

    /// The oldest stamp in flight.
    var oldest: Int64? { stamps.withLock { $0.keys.min() } }
}

extension RecordStorage {
    /// The delete log's tables: the deletion date of each deleted id (a log from before it has
    /// 0: it reads as deleted before any window), and per type the newest date purged.
    static func createDeleteLog(_ db: Database) throws {
        let columns = try db.columns(in: "deleted_records").map(\.name)
        if !columns.contains("deletedDate") {
            try db.execute(
                sql: "ALTER TABLE deleted_records ADD COLUMN deletedDate INTEGER NOT NULL DEFAULT 0")
        }
        try db.execute(
            sql: """
                CREATE INDEX IF NOT EXISTS deleted_records_type_date ON deleted_records(type, deletedDate);
                CREATE TABLE IF NOT EXISTS delete_log_purges (type TEXT PRIMARY KEY, purgedUntil INTEGER NOT NULL);
                """)
    }

    /// Logs `id` of `type` as deleted now (in the deleting transaction's stamp).
    func logDeleted(_ db: Database, id: String, type: String) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO deleted_records (id, type, deletedDate) VALUES (?, ?, ?)",
            arguments: [id, type, recordStamp()])
    }

    /// Purges the log of `type` (every type when nil) before `before` (ms since 1970), as
    /// Salesforce's retention or an administrator's purge of the recycle bin does: the ids go,
    /// and `earliestDateAvailable` moves to `before`. The ids stay known as deleted to calls on
    /// them (`ENTITY_IS_DELETED`).
    func purgeDeleteLog(type: String?, before: Int64) throws {
        try write { db in
            let types =
                try type.map { [$0] }
                ?? String.fetchAll(
                    db,
                    sql: "SELECT DISTINCT type FROM records UNION SELECT DISTINCT type FROM deleted_records")
            for type in types {
                try db.execute(
                    sql:
                        "UPDATE deleted_records SET deletedDate = 0 WHERE type = ? AND deletedDate > 0 AND deletedDate < ?",
                    arguments: [type, before])
                try db.execute(
                    sql: """
                        INSERT INTO delete_log_purges (type, purgedUntil) VALUES (?, ?)
                        ON CONFLICT(type) DO UPDATE SET purgedUntil = max(purgedUntil, excluded.purgedUntil)
                        """,
                    arguments: [type, before])
            }
        }
    }

    /// `GET sobjects/TYPE/deleted/?start=&end=`: the ids of `type` deleted in the window, by the
    /// rules of ``DeleteLog``; `retention` ms of log are kept before now.
    func deleted(type: String, start: Int64, end: Int64, retention: Int64, inFlight: Int64?) throws
        -> DeleteLog.Answer
    {
        let now = now()
        let (start, end) = (DeleteLog.minute(start), DeleteLog.minute(end))
        guard end - start > 60_000 else {
            throw DeleteLog.invalidDate(
                "startDate must chronologically precede endDate by more than one minute (seconds are ignored)"
            )
        }
        let retained = DeleteLog.minute(now - retention)
        if retained > 0 { try purgeDeleteLog(type: type, before: retained) }
        return try read { db in
            let purgedUntil =
                try Int64.fetchOne(
                    db, sql: "SELECT purgedUntil FROM delete_log_purges WHERE type = ?", arguments: [type])
                ?? 0
            guard start >= purgedUntil else {
                throw DeleteLog.invalidDate(
                    "startDate is before the earliest date available, \(DateTimeLiteral.format(milliseconds: purgedUntil)): the delete log before it was purged; replicate again from scratch"
                )
            }
            var covered = min(end, DeleteLog.minute(now))
            if let inFlight { covered = min(covered, DeleteLog.minute(inFlight)) }
            covered = max(covered, start)
            let count =
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT count(*) FROM deleted_records WHERE type = ? AND deletedDate >= ? AND deletedDate < ?",
                    arguments: [type, start, covered]) ?? 0
            guard count <= DeleteLog.idLimit else {
                throw SalesforceError(
                    status: 400, "EXCEEDED_ID_LIMIT",
                    "more than \(DeleteLog.idLimit) ids were deleted in the window; choose start and end dates closer together"
                )
            }
            let rows = try Row.fetchAll(
                db,
                sql:
                    "SELECT id, deletedDate FROM deleted_records WHERE type = ? AND deletedDate >= ? AND deletedDate < ? ORDER BY deletedDate, id",
                arguments: [type, start, covered])
            return DeleteLog.Answer(
                deleted: rows.map { (id: $0["id"], date: $0["deletedDate"]) },
                earliestDateAvailable: purgedUntil,
                latestDateCovered: covered)
        }
    }
}
