import GRDB

/// How much room the lease audit's records take: the lease history's intervals against its
/// limit, what was folded out of it, and the commit log.
public struct LeaseHistorySize: Sendable, Hashable, Encodable {
    /// The intervals the history holds.
    public var intervals: Int
    /// How many it keeps before the oldest are folded (the store's setting).
    public var limit: Int
    /// How many intervals were folded into the summary.
    public var folded: Int
    /// The first folded epoch, when some were folded.
    public var foldedFirstEpoch: Int64?
    /// The last folded epoch, when some were folded.
    public var foldedLastEpoch: Int64?
    /// The violations found in the folded intervals (strict-only ones not counted).
    public var foldedViolations: Int
    /// The commits the commit log holds (the newest ``CommitRecord/retained``, and up to
    /// ``CommitRecord/trimInterval`` more).
    public var commitLog: Int

    /// Reads the sizes in `reader`'s snapshot.
    public init(reading reader: StoreReader) throws {
        let fold = try reader.leaseHistoryFold()
        intervals = try reader.leaseHistoryCount()
        limit = try reader.leaseHistoryLimit()
        folded = fold?.intervals ?? 0
        foldedFirstEpoch = fold?.firstEpoch
        foldedLastEpoch = fold?.lastEpoch
        foldedViolations = fold?.violations ?? 0
        commitLog = try reader.commitLogCount()
    }
}

extension StoreReader {
    /// How many commits the commit log holds.
    public func commitLogCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM commit_log") ?? 0
    }
}
