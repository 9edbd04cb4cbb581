import GRDB

/// One lease interval in the history: who held the writer lease, from when until when.
public struct LeaseRecord: Sendable, Hashable, Codable {
    /// Strictly increasing across takes.
    public var epoch: Int64
    /// The name of the participant that held the lease.
    public var name: String
    /// The holder's process id.
    public var pid: Int32
    /// Milliseconds since 1970.
    public var acquired: Int64
    /// `nil` while held.
    public var released: Int64?
    /// `released` (clean), `taken-over` (closed by the next holder: the holder died, or stopped
    /// renewing the lease and was taken over).
    public var releaseKind: String?

    /// Makes a history row from its fields.
    public init(
        epoch: Int64, name: String, pid: Int32, acquired: Int64, released: Int64?, releaseKind: String?
    ) {
        self.epoch = epoch
        self.name = name
        self.pid = pid
        self.acquired = acquired
        self.released = released
        self.releaseKind = releaseKind
    }
}

extension LeaseRecord {
    /// A row of `lease_history`.
    init(row: Row) {
        self.init(
            epoch: row["epoch"], name: row["name"], pid: row["pid"], acquired: row["acquired"],
            released: row["released"], releaseKind: row["releaseKind"])
    }
}

extension StoreReader {
    /// The current lease epoch (0 before anyone took it): the newest interval's in the history.
    ///
    /// The history is where the epoch lives. Recording a holding inserts its interval, a fold
    /// never removes the newest one, and a lease turn's first write reads and writes the
    /// history's newest page anyway, so the epoch costs that write no page of its own.
    public func leaseEpoch() throws -> Int64 {
        try Int64.fetchOne(try cached("SELECT MAX(epoch) FROM lease_history")) ?? 0
    }

    /// Whether `epoch`'s interval is in the history and not closed yet.
    public func isLeaseEpochOpen(_ epoch: Int64) throws -> Bool {
        try Bool.fetchOne(
            try cached("SELECT released IS NULL FROM lease_history WHERE epoch = ?"), arguments: [epoch])
            ?? false
    }

    /// The open interval of the lease history (the current holder's), if any.
    public func openLeaseRecord() throws -> LeaseRecord? {
        try Row.fetchOne(
            db, sql: "SELECT * FROM lease_history WHERE released IS NULL ORDER BY epoch DESC LIMIT 1"
        )
        .map(LeaseRecord.init(row:))
    }

    /// The whole lease history, oldest first: the intervals not folded into
    /// ``leaseHistoryFold()`` (at most ``leaseHistoryLimit()``).
    public func leaseHistory() throws -> [LeaseRecord] {
        try leaseHistory(from: 0)
    }

    /// The lease history from `epoch` on (that epoch's interval included), oldest first.
    public func leaseHistory(from epoch: Int64) throws -> [LeaseRecord] {
        try Row.fetchAll(
            try cached("SELECT * FROM lease_history WHERE epoch >= ? ORDER BY epoch"), arguments: [epoch]
        ).map(LeaseRecord.init(row:))
    }
}

extension StoreTransaction {
    /// Records that `name` (process `pid`) holds the writer lease under `epoch` (higher than the
    /// store's): closes the interval before it as `closing` says (if still open), appends the
    /// history row, and folds the oldest intervals when the history passes its limit. Call only
    /// while holding the lease lock: a ``LeaseFence`` does, in its first write, and so does a
    /// takeover (`SharedStore.takeOverLease`). Internal: a holding is recorded only through those
    /// two.
    func recordLeaseEpoch(
        _ epoch: Int64, name: String, pid: Int32, acquired: Int64, closing: LeaseClosing
    ) throws {
        knownLeaseEpoch = epoch
        try cached(
            "UPDATE lease_history SET released = ?, releaseKind = ? WHERE epoch = ? AND released IS NULL"
        ).execute(arguments: [min(closing.at, acquired), closing.kind.rawValue, closing.epoch])
        try cached("INSERT INTO lease_history (epoch, name, pid, acquired) VALUES (?, ?, ?, ?)")
            .execute(arguments: [epoch, name, pid, acquired])
        try foldLeaseHistory(recorded: epoch)
    }
}
