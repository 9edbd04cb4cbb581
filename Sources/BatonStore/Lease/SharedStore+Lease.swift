import GRDB

/// The writer lease's own use of the store (BatonCoordinator's `WriterLease` only).
extension SharedStore {
    /// Takes the writer lease over from a holder that stopped renewing it: in one `IMMEDIATE`
    /// transaction, checks that the store's epoch is still `expected`, records `epoch` (closing
    /// the interval of `expected` as `closing` says, or as taken over now), and runs `install`
    /// (which checks that the holder still looks the same and puts this process's lock file in
    /// place) before committing. Two takers serialize on the transaction, so at most one wins;
    /// the old holder's fenced writes fail from the commit on.
    ///
    /// - Parameter deadline: how long to wait for SQLite's write lock (a holder frozen inside a
    ///   write transaction keeps it: the caller gets `busy` and can say so).
    /// - Returns: when the lease was taken (ms since 1970), or nil when it moved meanwhile.
    package func takeOverLease(
        from expected: Int64, epoch: Int64, closing: LeaseClosing?, name: String, pid: Int32,
        deadline: ContinuousClock.Instant, install: () throws -> Void
    ) throws -> Int64? {
        try counted {
            try writeHere(.leaseBookkeeping, deadline: deadline) { transaction in
                guard try transaction.leaseEpoch() == expected else { return nil }
                let now = transaction.now
                let closes =
                    closing?.epoch == expected
                    ? closing! : LeaseClosing(epoch: expected, at: now, kind: .takenOver)
                let acquired = max(now, closes.at)
                try transaction.recordLeaseEpoch(
                    epoch, name: name, pid: pid, acquired: acquired, closing: closes)
                try install()
                return acquired
            }
        }
    }

    /// The store's lease epoch, read on the write connection (not a reader): a process about to
    /// write under a lease it was just granted has that connection's page cache brought up to
    /// date once, where a reader's snapshot would be read once more by its first write.
    package func leaseEpochForWriting() throws -> Int64 {
        do {
            return try connections().writeWithoutTransaction { db in try StoreReader(db: db).leaseEpoch() }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "reading the lease epoch")
        }
    }
}
