import BatonCoordinator
import BatonStore

/// What `baton lease history` and `baton lease check` print.
public enum LeaseReport {
    /// The lease intervals as a table.
    public static func table(_ history: [LeaseRecord]) -> [String] {
        let rows = history.map { record in
            [
                String(record.epoch), record.name, String(record.pid),
                WallClock.iso8601(millis: record.acquired),
                record.released.map { WallClock.iso8601(millis: $0) } ?? "held", record.releaseKind ?? "",
            ]
        }
        return Table.render(header: ["EPOCH", "NAME", "PID", "ACQUIRED", "RELEASED", "HOW"], rows: rows)
    }

    /// The lease history and the commit log, audited.
    public struct Audit: Sendable {
        public var violations: [LeaseAudit.Violation]
        public var summary: String
        public var passed: Bool { violations.isEmpty }
    }

    /// Audits the store's lease history (with a release only the lock file holds yet, which the
    /// next holder's first write records) and its commit log; `strict` also fails commits made
    /// outside any lease.
    public static func audit(_ store: SharedStore, strict: Bool) throws -> Audit {
        let (recorded, commits) = try store.read { (try $0.leaseHistory(), try $0.commitLog()) }
        let history = LeaseHistory.fold(
            recorded, record: HeartbeatRecord.read(at: store.directory.writerLockPath))
        let report = LeaseAudit.checkCommits(commits, history: history, strict: strict)
        let all = LeaseAudit.check(history) + report.violations
        guard all.isEmpty else {
            return Audit(
                violations: all,
                summary:
                    "lease check failed: \(all.count) violation(s) in \(history.count) intervals and \(commits.count) commits"
            )
        }
        let unleased = report.unleased == 0 ? "" : " (\(report.unleased) made outside any lease)"
        return Audit(
            violations: [],
            summary:
                "lease check passed: \(history.count) intervals, epochs strictly increasing, no overlaps; \(commits.count) commits by the holder of their epoch\(unleased)"
        )
    }
}
