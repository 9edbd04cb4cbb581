/// How clean resync ghosts finds what the server no longer has: every id the target selects
/// compared with the soup (Mobile Sync's way, and the default: no ghost is left when it returns),
/// or, when asked for, only the deletions since the last clean (Salesforce's `sObject Get
/// Deleted`). A pure rule; the manager carries it out.
///
/// The deletions come in whole minutes up to the server's current one, so an incremental clean
/// leaves a record deleted in the last minute or so for a later clean; and they miss what left
/// the target's selection without being deleted (a filter's field changed, a record's sharing
/// taken away). So even when incremental is asked for, a full comparison runs: at the first
/// clean, when the server no longer holds the window (past its retention, or its delete log
/// purged), for a target that cannot ask for deletions, and once the last full comparison is
/// older than ``fullInterval``.
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
        case notIncremental = "an incremental clean was not asked for"
        case due = "the last full comparison is older than the interval"
        case windowExpired = "the server no longer holds the window"
        case targetCannotTell = "the target cannot ask for deletions"
    }

    /// A day: records that left the selection without being deleted go within a day.
    public static let fullInterval: Int64 = 86_400_000

    /// The plan for a sync whose marks are `coveredUntil` and `fullAt` (server ms), at `now`,
    /// when an incremental clean is asked for (`incremental`) or not.
    public static func plan(
        coveredUntil: Int64?, fullAt: Int64?, now: Int64, incremental: Bool, interval: Int64 = fullInterval
    ) -> Plan {
        guard incremental else { return .fullComparison(.notIncremental) }
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
