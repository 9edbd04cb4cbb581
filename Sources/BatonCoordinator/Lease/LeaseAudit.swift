import BatonStore

/// Checks a lease history: epochs strictly increase and intervals never overlap (each holder
/// released, or was taken over, no later than the next one acquired). Checks the commit log
/// against it: every commit came from the holder of the epoch current at the time, never under
/// a stale epoch.
public enum LeaseAudit {
    /// One problem found in the lease history or the commit log.
    public struct Violation: Sendable, Hashable, CustomStringConvertible {
        /// The epoch the problem is about.
        public var epoch: Int64
        /// What is wrong, as a phrase.
        public var problem: String
        public var description: String { "epoch \(epoch): \(problem)" }
    }

    /// Checks `history` (oldest first): epochs strictly increase, and every interval but the last
    /// was closed, no earlier than it began and no later than the next was acquired. Returns the
    /// violations found (none when sound).
    public static func check(_ history: [LeaseRecord]) -> [Violation] {
        LeaseRules.intervals(history).map(Violation.init)
    }

    /// What the commit log says about who wrote.
    public struct CommitReport: Sendable, Hashable {
        /// Commits by a process that was not the lease holder, under a stale epoch, or out of order.
        public var violations: [Violation] = []
        /// Commits made outside the lease (epoch 0, or by a process writing without it, such as
        /// `baton store upsert --unleased`). One made while somebody held the lease is always
        /// listed in `violations`; the others only when `strict`.
        public var unleased = 0
        /// How many commits were checked.
        public var checked = 0
    }

    /// Checks each commit against the lease history: the committing process held the epoch that
    /// was current, a fenced commit's epoch is that epoch, and epochs never go back.
    ///
    /// - Parameters:
    ///   - commits: the commit log to check, oldest first.
    ///   - history: the lease history to check them against, oldest first (as ``LeaseHistory``
    ///     reads it).
    ///   - strict: count commits made outside any lease as violations too (for runs where every
    ///     writer goes through the lease).
    public static func checkCommits(_ commits: [CommitRecord], history: [LeaseRecord], strict: Bool)
        -> CommitReport
    {
        checkCommits(commits, history: history, folded: nil, strict: strict)
    }

    /// ``checkCommits(_:history:strict:)`` for a history whose oldest intervals were folded:
    /// commits under the `folded` epochs were checked when their intervals were folded (the
    /// fold counts what was found), so only their order is checked here.
    static func checkCommits(
        _ commits: [CommitRecord], history: [LeaseRecord], folded: ClosedRange<Int64>?, strict: Bool
    ) -> CommitReport {
        let holders = Dictionary(history.map { ($0.epoch, $0) }, uniquingKeysWith: { first, _ in first })
        let findings = LeaseRules.commits(
            commits, holders: holders, checkOrder: true, skip: { folded?.contains($0.epoch) ?? false })
        return CommitReport(
            violations: findings.problems.filter { strict || !$0.strictOnly }.map(Violation.init),
            unleased: findings.unleased, checked: findings.checked)
    }
}

extension LeaseAudit.Violation {
    /// The violation a problem found by the audit's rules is.
    init(_ problem: LeaseHistoryFold.Problem) {
        self.init(epoch: problem.epoch, problem: problem.problem)
    }
}
