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
        var violations: [Violation] = []
        for (previous, next) in zip(history, history.dropFirst()) {
            if next.epoch <= previous.epoch {
                violations.append(
                    Violation(epoch: next.epoch, problem: "epoch does not increase after \(previous.epoch)"))
            }
            guard let released = previous.released else {
                violations.append(
                    Violation(
                        epoch: previous.epoch, problem: "never released, yet epoch \(next.epoch) was granted")
                )
                continue
            }
            if released > next.acquired {
                violations.append(
                    Violation(
                        epoch: next.epoch,
                        problem:
                            "acquired at \(next.acquired) before epoch \(previous.epoch) released at \(released)"
                    ))
            }
            if released < previous.acquired {
                violations.append(
                    Violation(epoch: previous.epoch, problem: "released before it was acquired"))
            }
        }
        return violations
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
        let holders = Dictionary(history.map { ($0.epoch, $0) }, uniquingKeysWith: { first, _ in first })
        var report = CommitReport(checked: commits.count)
        var highest: Int64 = 0
        for commit in commits {
            if commit.epoch < highest {
                report.violations.append(
                    Violation(
                        epoch: commit.epoch,
                        problem: "commit \(commit.sequence) by pid \(commit.pid) came after epoch \(highest)")
                )
            }
            highest = max(highest, commit.epoch)
            if let fenced = commit.fencedEpoch, fenced != commit.epoch {
                report.violations.append(
                    Violation(
                        epoch: commit.epoch,
                        problem:
                            "commit \(commit.sequence) by pid \(commit.pid) was fenced by stale epoch \(fenced)"
                    ))
            }
            guard let holder = holders[commit.epoch], holder.pid == commit.pid else {
                report.unleased += 1
                // Outside the lease while somebody held it: a write the holder did not expect
                // (a tool run with --unleased during a sync), always a violation.
                let heldThen =
                    holders[commit.epoch].map { holder in
                        commit.at >= holder.acquired && (holder.released.map { commit.at <= $0 } ?? true)
                    } ?? false
                if strict || commit.fencedEpoch != nil || heldThen {
                    let who = holders[commit.epoch].map { "'\($0.name)' (pid \($0.pid))" } ?? "nobody"
                    report.violations.append(
                        Violation(
                            epoch: commit.epoch,
                            problem:
                                "commit \(commit.sequence) by pid \(commit.pid) while the lease was held by \(who)"
                        ))
                }
                continue
            }
            if commit.at < holder.acquired {
                report.violations.append(
                    Violation(
                        epoch: commit.epoch,
                        problem: "commit \(commit.sequence) at \(commit.at) before the lease was taken"))
            }
            if let released = holder.released, commit.at > released {
                report.violations.append(
                    Violation(
                        epoch: commit.epoch,
                        problem:
                            "commit \(commit.sequence) by '\(holder.name)' at \(commit.at), after the lease ended at \(released)"
                    ))
            }
        }
        return report
    }
}
