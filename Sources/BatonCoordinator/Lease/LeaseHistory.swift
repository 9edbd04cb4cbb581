import BatonStore

/// The lease history as it stands: the store's rows, plus what only the lock file says yet.
///
/// A holder records its interval with its first write and its release in the lock file; the next
/// holder's first write records that release. Until then the last interval looks open in the
/// store, and the lock file's record says when (and how) it ended.
public enum LeaseHistory {
    /// The history, oldest first, with a release the store has not recorded yet folded in.
    public static func read(store: SharedStore, directory: SharedDirectory) throws -> [LeaseRecord] {
        let history = try store.read { try $0.leaseHistory() }
        return fold(history, record: HeartbeatRecord.read(at: directory.writerLockPath))
    }

    /// ``read(store:directory:)``, and the summary of the intervals folded out of the history
    /// (if any), from one snapshot.
    public static func readWithFold(store: SharedStore, directory: SharedDirectory) throws -> (
        [LeaseRecord], LeaseHistoryFold?
    ) {
        let (history, folded) = try store.read { (try $0.leaseHistory(), try $0.leaseHistoryFold()) }
        return (fold(history, record: HeartbeatRecord.read(at: directory.writerLockPath)), folded)
    }

    /// `history` with the end of its open interval taken from the lock file's `record`, when the
    /// record says it ended.
    public static func fold(_ history: [LeaseRecord], record: HeartbeatRecord?) -> [LeaseRecord] {
        guard var last = history.last, last.released == nil, let record,
            let closing = record.closing(of: last.epoch)
        else { return history }
        last.released = max(closing.at, last.acquired)
        last.releaseKind = closing.kind.rawValue
        return history.dropLast() + [last]
    }

    /// Who holds the lease now, as the lock file says: nil when it is free or its holder is gone.
    /// The name is nil while the holding is not in the store's history (its first write has not
    /// committed yet).
    public static func holder(store: SharedStore, directory: SharedDirectory) throws -> (
        name: String?, pid: Int32
    )? {
        guard let record = HeartbeatRecord.read(at: directory.writerLockPath), record.released == 0,
            ProcessState.of(record.pid) != .dead
        else { return nil }
        let recorded = try store.read { try $0.leaseHistory() }.last { $0.epoch == record.epoch }
        return (recorded?.name, record.pid)
    }
}
