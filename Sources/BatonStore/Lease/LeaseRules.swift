/// The rules a lease audit checks, shared by `LeaseAudit` (BatonCoordinator), which checks the
/// history as it stands, and the fold, which checks the oldest intervals as they leave it.
package enum LeaseRules {
    /// One problem found: the epoch it is about, what is wrong, and whether it is one only
    /// under `--strict` (a commit made outside any lease while nobody held it).
    package typealias Problem = LeaseHistoryFold.Problem

    /// Checks `history` (oldest first): epochs strictly increase, and every interval but the last
    /// was closed, no earlier than it began and no later than the next was acquired.
    package static func intervals(_ history: [LeaseRecord]) -> [Problem] {
        var problems: [Problem] = []
        for (previous, next) in zip(history, history.dropFirst()) {
            if next.epoch <= previous.epoch {
                problems.append(Problem(next.epoch, "epoch does not increase after \(previous.epoch)"))
            }
            guard let released = previous.released else {
                problems.append(
                    Problem(previous.epoch, "never released, yet epoch \(next.epoch) was granted"))
                continue
            }
            if released > next.acquired {
                problems.append(
                    Problem(
                        next.epoch,
                        "acquired at \(next.acquired) before epoch \(previous.epoch) released at \(released)")
                )
            }
            if released < previous.acquired {
                problems.append(Problem(previous.epoch, "released before it was acquired"))
            }
        }
        return problems
    }

    /// What the commit log says about who wrote.
    package struct CommitFindings: Sendable, Hashable {
        /// The problems, in commit order; those made outside any lease while nobody held it are
        /// marked `strictOnly`.
        package var problems: [Problem] = []
        /// Commits made outside the lease (epoch 0, or by a process that did not hold the epoch).
        package var unleased = 0
        /// How many commits were checked against their holder.
        package var checked = 0
    }

    /// Checks each commit against the intervals in `holders` (by epoch): the committing process
    /// held the epoch that was current, within its interval, and a fenced commit's epoch is that
    /// epoch.
    ///
    /// - Parameters:
    ///   - checkOrder: also check that epochs never go back from one commit to the next (over
    ///     every commit given, skipped ones included).
    ///   - skip: commits checked already (when their intervals were folded): only their order is
    ///     checked.
    package static func commits(
        _ commits: [CommitRecord], holders: [Int64: LeaseRecord], checkOrder: Bool,
        skip: (CommitRecord) -> Bool = { _ in false }
    ) -> CommitFindings {
        var findings = CommitFindings()
        var highest: Int64 = 0
        for commit in commits {
            if checkOrder, commit.epoch < highest {
                findings.problems.append(
                    Problem(
                        commit.epoch,
                        "commit \(commit.sequence) by pid \(commit.pid) came after epoch \(highest)"))
            }
            highest = max(highest, commit.epoch)
            guard !skip(commit) else { continue }
            findings.checked += 1
            if let fenced = commit.fencedEpoch, fenced != commit.epoch {
                findings.problems.append(
                    Problem(
                        commit.epoch,
                        "commit \(commit.sequence) by pid \(commit.pid) was fenced by stale epoch \(fenced)"))
            }
            guard let holder = holders[commit.epoch], holder.pid == commit.pid else {
                findings.unleased += 1
                // Outside the lease while somebody held it: a write the holder did not expect
                // (a tool run with --unleased during a sync), always a violation; otherwise one
                // only in strict mode.
                let heldThen =
                    holders[commit.epoch].map { holder in
                        commit.at >= holder.acquired && (holder.released.map { commit.at <= $0 } ?? true)
                    } ?? false
                let who = holders[commit.epoch].map { "'\($0.name)' (pid \($0.pid))" } ?? "nobody"
                findings.problems.append(
                    Problem(
                        commit.epoch,
                        "commit \(commit.sequence) by pid \(commit.pid) while the lease was held by \(who)",
                        strictOnly: commit.fencedEpoch == nil && !heldThen))
                continue
            }
            if commit.at < holder.acquired {
                findings.problems.append(
                    Problem(
                        commit.epoch, "commit \(commit.sequence) at \(commit.at) before the lease was taken"))
            }
            if let released = holder.released, commit.at > released {
                findings.problems.append(
                    Problem(
                        commit.epoch,
                        "commit \(commit.sequence) by '\(holder.name)' at \(commit.at), after the lease ended at \(released)"
                    ))
            }
        }
        return findings
    }
}
