import GRDB

/// One committed write transaction in the store's commit log: which process committed it and
/// which lease epoch was current. Lease audits check it against the lease history.
public struct CommitRecord: Sendable, Hashable {
    /// How many of the newest commits the log keeps.
    public static let retained: Int64 = 10_000
    /// Older rows are deleted once every this many commits.
    public static let trimInterval: Int64 = 100

    /// The change sequence this commit produced.
    public var sequence: Int64
    /// The lease epoch current when the transaction committed (0 before anyone took the lease).
    public var epoch: Int64
    /// The epoch the writer fenced the transaction with, when it did.
    public var fencedEpoch: Int64?
    /// The process that committed the transaction.
    public var pid: Int32
    /// Milliseconds since 1970, taken inside the transaction.
    public var at: Int64

    /// Makes a commit log row from its fields.
    public init(sequence: Int64, epoch: Int64, fencedEpoch: Int64?, pid: Int32, at: Int64) {
        self.sequence = sequence
        self.epoch = epoch
        self.fencedEpoch = fencedEpoch
        self.pid = pid
        self.at = at
    }
}

extension StoreReader {
    /// The commit log, oldest first (at most ``CommitRecord/retained`` + ``CommitRecord/trimInterval`` rows).
    public func commitLog() throws -> [CommitRecord] {
        try Row.fetchAll(db, sql: "SELECT * FROM commit_log ORDER BY seq").map(CommitRecord.init(row:))
    }
}

extension CommitRecord {
    /// A row of `commit_log`.
    init(row: Row) {
        self.init(
            sequence: row["seq"], epoch: row["epoch"], fencedEpoch: row["fencedEpoch"], pid: row["pid"],
            at: row["at"])
    }
}
