import Foundation
import GRDB

/// Read access inside one snapshot of the store. Valid only inside the closure it is given to.
public class StoreReader {
    let db: Database
    /// Soups looked up in this transaction (the registry cannot change under a transaction,
    /// except by this one, which updates the cache).
    var soupCache: [String: SoupDescription] = [:]

    init(db: Database) {
        self.db = db
    }

    /// A prepared statement kept by the connection across transactions (hot paths only).
    func cached(_ sql: String) throws -> Statement {
        try db.cachedStatement(sql: sql)
    }
}

/// Write access inside one `IMMEDIATE` transaction; everything done through it commits or rolls
/// back together. Valid only inside the closure it is given to.
public final class StoreTransaction: StoreReader {
    /// When the transaction began (ms since 1970): the time its commit is logged with.
    public let now = WallClock.nowMillis()
    /// The soups written in this transaction, each with its statements prepared.
    var soupWriters: [String: SoupWriter] = [:]
    /// A lower bound of the lease history's oldest epoch (0: unknown), from the store handle's
    /// earlier commits, and raised by this transaction's fold check; the store keeps it once
    /// this transaction commits.
    var knownOldestEpoch: Int64 = 0
    /// The store's lease epoch as this transaction learnt it (read once, or recorded).
    var knownLeaseEpoch: Int64?

    /// The store's lease epoch now: from memory when this transaction knows it, else read (once).
    func currentLeaseEpoch() throws -> Int64 {
        if let knownLeaseEpoch { return knownLeaseEpoch }
        let epoch = try leaseEpoch()
        knownLeaseEpoch = epoch
        return epoch
    }

    /// Bumps the change sequence and appends this commit to the commit log (who committed,
    /// under which epoch), keeping the newest ``CommitRecord/retained`` rows (trimmed once every
    /// ``CommitRecord/trimInterval`` commits, so most commits touch only the log's newest page).
    ///
    /// - Returns: the new change sequence.
    @discardableResult
    func recordCommit(fencedBy epoch: Int64?) throws -> Int64 {
        let sequence =
            try Int64.fetchOne(cached("UPDATE change_sequence SET seq = seq + 1 WHERE id = 1 RETURNING seq"))
            ?? 0
        try cached("INSERT INTO commit_log (seq, epoch, fencedEpoch, pid, at) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [sequence, try currentLeaseEpoch(), epoch, getpid(), now])
        if sequence % CommitRecord.trimInterval == 0 {
            try cached("DELETE FROM commit_log WHERE seq <= ?").execute(
                arguments: [sequence - CommitRecord.retained])
        }
        return sequence
    }
}

extension StoreReader {
    /// The change sequence: bumped by every committed write, never decreasing.
    public func changeSequence() throws -> Int64 {
        try Int64.fetchOne(try cached("SELECT seq FROM change_sequence WHERE id = 1")) ?? 0
    }

    /// The result of `PRAGMA integrity_check`: `"ok"` when the file is sound.
    public func integrityCheck() throws -> String {
        let rows = try String.fetchAll(db, sql: "PRAGMA integrity_check")
        return rows.joined(separator: "; ")
    }
}

extension SharedStore {
    /// The change sequence of the last commit.
    public func changeSequence() throws -> Int64 {
        try read { try $0.changeSequence() }
    }
}
