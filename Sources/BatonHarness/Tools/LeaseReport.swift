import BatonCoordinator
import BatonStore

/// What `baton lease history` and `baton lease check` print.
public enum LeaseReport {
    /// The lease intervals as a table; the intervals folded out of the history first, as one row
    /// (their epochs, when the first began and the last ended, how many, what the audit found).
    public static func table(_ history: [LeaseRecord], folded: LeaseHistoryFold? = nil) -> [String] {
        var rows: [[String]] = []
        if let folded {
            var how = "folded: \(folded.intervals) intervals, \(folded.violations) violation(s)"
            if folded.strictViolations > 0 { how += ", \(folded.strictViolations) outside any lease" }
            rows.append([
                "\(folded.firstEpoch)-\(folded.lastEpoch)", "(folded)", "",
                WallClock.iso8601(millis: folded.firstAcquired),
                folded.lastReleased.map { WallClock.iso8601(millis: $0) } ?? "", how,
            ])
        }
        rows += history.map { record in
            [
                String(record.epoch), record.name, String(record.pid),
                WallClock.iso8601(millis: record.acquired),
                record.released.map { WallClock.iso8601(millis: $0) } ?? "held", record.releaseKind ?? "",
            ]
        }
        return Table.render(header: ["EPOCH", "NAME", "PID", "ACQUIRED", "RELEASED", "HOW"], rows: rows)
    }

    /// One element of `baton lease history --json`: the summary of the folded intervals (first,
    /// when some were folded), or an interval.
    public enum Entry: Encodable, Sendable {
        /// `{"folded": {…}}`.
        case folded(LeaseHistoryFold)
        /// An interval, with its fields.
        case interval(LeaseRecord)

        private enum CodingKeys: String, CodingKey { case folded }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .folded(let fold):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(fold, forKey: .folded)
            case .interval(let record): try record.encode(to: encoder)
            }
        }
    }

    /// The history as `baton lease history --json` prints it.
    public static func entries(_ history: [LeaseRecord], folded: LeaseHistoryFold?) -> [Entry] {
        (folded.map { [Entry.folded($0)] } ?? []) + history.map(Entry.interval)
    }

    /// The lease history and the commit log, audited.
    public struct Audit: Sendable {
        public var violations: [LeaseAudit.Violation]
        /// Tables whose write guard is gone or changed (`--strict`), each "TABLE: what".
        public var unguarded: [String] = []
        public var summary: String
        public var passed: Bool { violations.isEmpty && unguarded.isEmpty }
    }

    /// Audits the store's lease history (with a release only the lock file holds yet, which the
    /// next holder's first write records, and what the fold found in the intervals folded out of
    /// it) and its commit log; `strict` also fails commits made outside any lease.
    public static func audit(_ store: SharedStore, strict: Bool) throws -> Audit {
        summarize(try LeaseAudit.audit(store: store, strict: strict))
    }

    /// The one-line verdict on an audit.
    static func summarize(_ report: LeaseAudit.Report) -> Audit {
        let folded =
            report.folded.map { " (and \($0.intervals) folded, epochs \($0.firstEpoch)-\($0.lastEpoch))" }
            ?? ""
        guard report.passed else {
            let unguarded =
                report.unguarded.isEmpty
                ? ""
                : "; \(report.unguarded.count) table(s) written by Baton without their write guard (something else changed the store: \(report.unguarded.map { $0.prefix { $0 != ":" } }.joined(separator: ", ")))"
            return Audit(
                violations: report.violations, unguarded: report.unguarded,
                summary:
                    "lease check failed: \(report.violations.count) violation(s) in \(report.intervals) intervals\(folded) and \(report.commits) commits\(unguarded)"
            )
        }
        let unleased = report.unleased == 0 ? "" : " (\(report.unleased) made outside any lease)"
        return Audit(
            violations: [],
            summary:
                "lease check passed: \(report.intervals) intervals\(folded), epochs strictly increasing, no overlaps; \(report.commits) commits by the holder of their epoch\(unleased)"
        )
    }
}
