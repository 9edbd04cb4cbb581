import BatonStore

/// What the kernel's holders of `D/writer.lock` (``LockHolders``, from `/proc/locks`) mean beside
/// the lock file's heartbeat record, which only a Baton holder writes: a process that locks the
/// file without being Baton (`flock D/writer.lock …`) leaves the last holder's record in place.
public enum WriterLockHolders {
    /// The holders that are neither a participant (`participantPids`: the pids of the live
    /// participants' status files) nor the holder the record names while it holds the lease (a
    /// tool such as `baton store upsert` holds it without being a participant). A process that
    /// holds the lock while the record says its holder let go is foreign too.
    public static func foreign(
        _ holders: [LockHolder], record: HeartbeatRecord?, participantPids: Set<Int32>
    ) -> [LockHolder] {
        holders.filter { holder in
            guard let pid = holder.knownPid else { return true }
            if participantPids.contains(pid) { return false }
            return !(record.map { $0.pid == pid && $0.released == 0 } ?? false)
        }
    }

    /// Whom a takeover takes the lease from, when it is not the holder the record names: the
    /// kernel's holders, when the record says its holder let go or names a process the kernel
    /// does not list. Empty when the kernel agrees with the record, or names nobody (`holders`
    /// nil or empty: `/proc/locks` unreadable, or the holder let go meanwhile), so the record's
    /// holder stands. The taker itself (`taker`) is never among them: the kernel may have
    /// granted it the lock its wait was on as the holder died (a holder killed by the
    /// frozen-holder policy) before the takeover completes.
    public static func takenOverFrom(_ holders: [LockHolder]?, record: HeartbeatRecord?, taker: Int32)
        -> [LockHolder]
    {
        let holders = holders?.filter { $0.knownPid != taker }
        guard let holders, !holders.isEmpty else { return [] }
        if let record, record.released == 0, holders.contains(where: { $0.pid == record.pid }) { return [] }
        return holders
    }
}
