/// How clean resync ghosts finds what the server no longer has: only the deletions since the
/// last clean (Salesforce's `sObject Get Deleted`), or every id the target selects compared with
/// the soup (Mobile Sync's way). A pure rule; the manager carries it out.
///
/// The deletions miss what left the target's selection without being deleted (a filter's field
/// changed, a record's sharing taken away), so a full comparison still runs: at the first clean,
/// on request, when the server no longer holds the window (past its retention, or its delete
/// log purged), for a target that cannot ask for deletions, and once the last full comparison
/// is older than ``fullInterval``.
public enum GhostCleaning {
    /// What a clean does.
    public enum Plan: Sendable, Hashable {
        /// Ask for the deletions from `since` (server ms since 1970).
        case deletionsSince(Int64)
        /// Compare every id.
        case fullComparison(Reason)
    }

    /// Why a clean compares every id.
    public enum Reason: String, Sendable, Hashable {
        case firstClean = "no clean has set a window yet"
        case requested = "a full comparison was asked for"
        case due = "the last full comparison is older than the interval"
        case windowExpired = "the server no longer holds the window"
        case targetCannotTell = "the target cannot ask for deletions"
    }

    /// A day: records that left the selection without being deleted go within a day.
    public static let fullInterval: Int64 = 86_400_000

    /// The plan for a sync whose marks are `coveredUntil` and `fullAt` (server ms), at `now`.
    public static func plan(
        coveredUntil: Int64?, fullAt: Int64?, now: Int64, requestedFull: Bool, interval: Int64 = fullInterval
    ) -> Plan {
        if requestedFull { return .fullComparison(.requested) }
        guard let coveredUntil, let fullAt else { return .fullComparison(.firstClean) }
        if now - fullAt >= interval { return .fullComparison(.due) }
        return .deletionsSince(coveredUntil)
    }

    /// The marks a full comparison leaves, when it read the server's clock (`serverTime`)
    /// before fetching the ids: the next window starts `overlap` before, so a deletion that
    /// committed after the ids were read, stamped before, is in it. Nil marks (no clock) make
    /// the next clean compare every id again.
    public static func marksAfterFull(serverTime: Int64?, overlap: Int64) -> (
        coveredUntil: Int64, fullAt: Int64
    )? {
        serverTime.map { (max(0, $0 - overlap), $0) }
    }
}
