import BatonStore

extension LeaseAudit {
    /// The audit of a whole store, as `baton lease check` runs it: the intervals the history
    /// keeps, the commit log, and what the fold found in the intervals folded out of the history.
    public struct Report: Sendable, Hashable {
        /// Every violation: those the fold recorded (oldest first), then those in the intervals
        /// kept, then those in the commit log.
        public var violations: [Violation]
        /// The intervals the history keeps (the folded ones not counted).
        public var intervals: Int
        /// The summary of the folded intervals, when some were folded.
        public var folded: LeaseHistoryFold?
        /// The commits in the commit log.
        public var commits: Int
        /// Commits made outside any lease: in the commit log, and among those checked when their
        /// intervals were folded.
        public var unleased: Int

        /// The tables Baton writes whose write guard is gone or changed (strict audits only):
        /// something other than Baton changed the schema, and may have written past the lease.
        public var unguarded: [String] = []

        /// Whether nothing was found wrong.
        public var passed: Bool { violations.isEmpty && unguarded.isEmpty }
    }

    /// Audits `history` (oldest first, as ``LeaseHistory/read(store:directory:)`` reads it) and
    /// `commits`, with the problems `folded` recorded: a fold's violations fail the audit as
    /// they did before their intervals were folded (its strict-only ones when `strict`), and
    /// commits under folded epochs, checked when folded, are not checked again.
    public static func audit(
        history: [LeaseRecord], commits: [CommitRecord], folded: LeaseHistoryFold?, strict: Bool
    ) -> Report {
        var violations: [Violation] = []
        if let folded {
            let listed = folded.problems.filter { strict || !$0.strictOnly }
            violations += listed.map(Violation.init)
            let total = folded.violations + (strict ? folded.strictViolations : 0)
            if total > listed.count {
                violations.append(
                    Violation(
                        epoch: folded.lastEpoch,
                        problem:
                            "\(total - listed.count) more violation(s) among the folded intervals (epochs \(folded.firstEpoch)-\(folded.lastEpoch))"
                    ))
            }
        }
        violations += check(history)
        let report = checkCommits(commits, history: history, folded: folded?.epochs, strict: strict)
        violations += report.violations
        return Report(
            violations: violations, intervals: history.count, folded: folded, commits: commits.count,
            unleased: report.unleased + (folded?.commitsOutsideLease ?? 0))
    }

    /// Reads the store's lease history, its fold and its commit log from one snapshot (with a
    /// release only the lock file holds yet) and audits them.
    ///
    /// - Throws: ``StoreError`` when the store cannot be read.
    /// With `strict`, the tables whose write guard is gone or changed fail it too.
    public static func audit(store: SharedStore, strict: Bool) throws -> Report {
        let (recorded, commits, folded, unguarded) = try store.read {
            (
                try $0.leaseHistory(), try $0.commitLog(), try $0.leaseHistoryFold(),
                strict ? try $0.unguardedTables() : []
            )
        }
        let history = LeaseHistory.fold(
            recorded, record: HeartbeatRecord.read(at: store.directory.writerLockPath))
        var report = audit(history: history, commits: commits, folded: folded, strict: strict)
        report.unguarded = unguarded
        return report
    }
}
