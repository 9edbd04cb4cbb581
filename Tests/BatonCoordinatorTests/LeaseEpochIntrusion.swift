@testable import BatonStore

extension StoreTransaction {
    /// Records the next epoch for `name` now, closing the one before as taken over, as a tool or
    /// an intruder holding the lease lock itself would (tests only: the product records a
    /// holding only through the fence's first write and the takeover).
    ///
    /// - Returns: the new epoch.
    func beginLeaseEpoch(name: String, pid: Int32) throws -> Int64 {
        let previous = try leaseEpoch()
        try recordLeaseEpoch(
            previous + 1, name: name, pid: pid, acquired: now,
            closing: LeaseClosing(epoch: previous, at: now, kind: .takenOver))
        return previous + 1
    }
}
