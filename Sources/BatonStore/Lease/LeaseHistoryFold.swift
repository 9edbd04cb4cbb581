import GRDB

/// The oldest lease intervals, folded out of the history into one summary: their epochs, how
/// many there were, and what the audit found in them when they were folded.
///
/// The history keeps at most ``StoreReader/leaseHistoryLimit()`` intervals (a store setting,
/// ``defaultLimit`` unless set with ``StoreTransaction/setLeaseHistoryLimit(_:)``). When recording
/// a holding takes it past that, the same transaction folds the oldest tenth of the limit into
/// this summary: it checks them as `baton lease check` would (intervals never overlap, epochs
/// increase, and each commit in the commit log under their epochs came from their holder while
/// it held them) and keeps the counts, and the first ``keptProblems`` problems found, so the
/// audit still reports them after the rows are gone. A fold never needs a transaction of its
/// own.
public struct LeaseHistoryFold: Sendable, Hashable, Encodable {
    /// One problem the audit found in a folded interval or a commit made under its epoch.
    public struct Problem: Sendable, Hashable, Encodable, CustomStringConvertible {
        /// The epoch the problem is about.
        public var epoch: Int64
        /// What is wrong, as a phrase.
        public var problem: String
        /// True for a commit made outside any lease while nobody held it: a violation only in
        /// strict mode (`baton lease check --strict`).
        public var strictOnly: Bool

        /// Makes a problem about `epoch`.
        public init(_ epoch: Int64, _ problem: String, strictOnly: Bool = false) {
            self.epoch = epoch
            self.problem = problem
            self.strictOnly = strictOnly
        }

        public var description: String { "epoch \(epoch): \(problem)" }
    }

    /// How many intervals the history keeps when no limit was set.
    public static let defaultLimit = 10_000
    /// The limits ``StoreTransaction/setLeaseHistoryLimit(_:)`` accepts.
    public static let limits: ClosedRange<Int> = 10...10_000_000
    /// How many problems the summary keeps word for word (it counts them all).
    public static let keptProblems = 100

    /// The first folded epoch.
    public var firstEpoch: Int64
    /// The last folded epoch: every interval up to it is in this summary, none after it.
    public var lastEpoch: Int64
    /// How many intervals were folded.
    public var intervals: Int
    /// When the first folded interval began (ms since 1970).
    public var firstAcquired: Int64
    /// When the last folded interval ended (ms since 1970), if it did.
    public var lastReleased: Int64?
    /// The commits under folded epochs that were still in the commit log, checked when folded.
    public var commits: Int
    /// How many of them were made outside any lease.
    public var commitsOutsideLease: Int
    /// Violations found (each fails `baton lease check`).
    public var violations: Int
    /// Commits found made outside any lease while nobody held it (each fails only
    /// `baton lease check --strict`).
    public var strictViolations: Int
    /// The first problems found, at most ``keptProblems``, oldest first.
    public var problems: [Problem]

    /// The folded epochs.
    public var epochs: ClosedRange<Int64> { firstEpoch...lastEpoch }

    /// Makes a summary from its fields (the store makes them as it folds; tests and tools read
    /// them).
    public init(
        firstEpoch: Int64, lastEpoch: Int64, intervals: Int, firstAcquired: Int64, lastReleased: Int64?,
        commits: Int, commitsOutsideLease: Int, violations: Int, strictViolations: Int, problems: [Problem]
    ) {
        self.firstEpoch = firstEpoch
        self.lastEpoch = lastEpoch
        self.intervals = intervals
        self.firstAcquired = firstAcquired
        self.lastReleased = lastReleased
        self.commits = commits
        self.commitsOutsideLease = commitsOutsideLease
        self.violations = violations
        self.strictViolations = strictViolations
        self.problems = problems
    }
}

extension StoreReader {
    /// How many intervals the lease history keeps before the oldest are folded (the store's
    /// setting, or ``LeaseHistoryFold/defaultLimit``).
    public func leaseHistoryLimit() throws -> Int {
        try Int.fetchOne(try cached("SELECT value FROM store_setting WHERE name = 'leaseHistoryLimit'"))
            ?? LeaseHistoryFold.defaultLimit
    }

    /// The summary of the intervals folded out of the lease history, if any were.
    public func leaseHistoryFold() throws -> LeaseHistoryFold? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM lease_history_fold WHERE id = 1") else {
            return nil
        }
        let problems = try Row.fetchAll(
            db, sql: "SELECT epoch, problem, strictOnly FROM lease_history_fold_problem ORDER BY id"
        ).map { LeaseHistoryFold.Problem($0["epoch"], $0["problem"], strictOnly: $0["strictOnly"]) }
        return LeaseHistoryFold(
            firstEpoch: row["firstEpoch"], lastEpoch: row["lastEpoch"], intervals: row["intervals"],
            firstAcquired: row["firstAcquired"], lastReleased: row["lastReleased"], commits: row["commits"],
            commitsOutsideLease: row["commitsOutsideLease"], violations: row["violations"],
            strictViolations: row["strictViolations"], problems: problems)
    }

    /// How many intervals the lease history holds (the folded ones not counted).
    public func leaseHistoryCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM lease_history") ?? 0
    }
}

extension StoreTransaction {
    /// Sets how many intervals the lease history keeps, for every process sharing the store, and
    /// folds the oldest at once when it holds more. Write it under the lease, like any write.
    ///
    /// - Throws: `invalidSetting` when `limit` is outside ``LeaseHistoryFold/limits``.
    public func setLeaseHistoryLimit(_ limit: Int) throws {
        guard LeaseHistoryFold.limits.contains(limit) else {
            throw StoreError(
                .invalidSetting,
                "the lease history limit must be between \(LeaseHistoryFold.limits.lowerBound) and \(LeaseHistoryFold.limits.upperBound) intervals"
            )
        }
        try cached(
            """
            INSERT INTO store_setting (name, value) VALUES ('leaseHistoryLimit', ?)
            ON CONFLICT(name) DO UPDATE SET value = excluded.value
            """
        ).execute(arguments: [limit])
        try foldLeaseHistory()
    }

    /// Folds the oldest intervals into the summary when the history holds more than its limit,
    /// leaving nine tenths of the limit (so a fold's cost is shared by a tenth of the limit's
    /// holdings). Runs in the transaction that records a holding: a fold costs no commit and no
    /// sync of its own, and rolls back with it.
    ///
    /// Only closed intervals below the newest ones are folded, so every commit under a folded
    /// epoch is already in the commit log: each is checked against its interval now, and
    /// `lease check` counts what was found here instead of checking it again.
    ///
    /// - Parameter recorded: the epoch this transaction just recorded (the newest), when it
    ///   recorded one: with ``knownOldestEpoch`` that can settle the common case without a query.
    func foldLeaseHistory(recorded: Int64? = nil) throws {
        let limit = try leaseHistoryLimit()
        // Epochs are unique, so a span of epochs no wider than the limit holds no more rows. The
        // oldest epoch only ever grows (a fold deletes from the bottom), so one seen before is a
        // lower bound: the common case costs no lookup at all.
        if let recorded, knownOldestEpoch > 0, recorded - knownOldestEpoch < Int64(limit) { return }
        guard let oldest = try Int64.fetchOne(cached("SELECT MIN(epoch) FROM lease_history")) else { return }
        let newest = try recorded ?? leaseEpoch()
        knownOldestEpoch = oldest
        guard newest - oldest >= Int64(limit) else { return }
        let rows = try Int.fetchOne(cached("SELECT COUNT(*) FROM lease_history")) ?? 0
        guard rows > limit else { return }
        // At least 9 kept (limits start at 10): the newest interval, whose epoch is the store's
        // (``StoreReader/leaseEpoch()``), is never folded.
        let keep = limit - max(1, limit / 10)
        let folding = try Row.fetchAll(
            cached("SELECT * FROM lease_history ORDER BY epoch LIMIT ?"), arguments: [rows - keep]
        ).map(LeaseRecord.init(row:))
        guard let first = folding.first, let last = folding.last else { return }
        // The pair of the last folded interval and the first kept one is checked here too: the
        // audit of what is kept starts from the first kept one.
        let next = try Row.fetchOne(
            cached("SELECT * FROM lease_history WHERE epoch > ? ORDER BY epoch LIMIT 1"),
            arguments: [last.epoch]
        ).map(LeaseRecord.init(row:))
        let commits = try Row.fetchAll(
            cached("SELECT * FROM commit_log WHERE epoch BETWEEN ? AND ? ORDER BY seq"),
            arguments: [first.epoch, last.epoch]
        ).map(CommitRecord.init(row:))
        let holders = Dictionary(folding.map { ($0.epoch, $0) }, uniquingKeysWith: { first, _ in first })
        let findings = LeaseRules.commits(commits, holders: holders, checkOrder: false)
        let problems = LeaseRules.intervals(folding + (next.map { [$0] } ?? [])) + findings.problems

        var fold =
            try leaseHistoryFold()
            ?? LeaseHistoryFold(
                firstEpoch: first.epoch, lastEpoch: last.epoch, intervals: 0, firstAcquired: first.acquired,
                lastReleased: nil, commits: 0, commitsOutsideLease: 0, violations: 0, strictViolations: 0,
                problems: [])
        fold.lastEpoch = last.epoch
        fold.intervals += folding.count
        fold.lastReleased = last.released
        fold.commits += commits.count
        fold.commitsOutsideLease += findings.unleased
        fold.violations += problems.count(where: { !$0.strictOnly })
        fold.strictViolations += problems.count(where: \.strictOnly)
        try cached(
            """
            INSERT OR REPLACE INTO lease_history_fold (id, firstEpoch, lastEpoch, intervals, firstAcquired,
                lastReleased, commits, commitsOutsideLease, violations, strictViolations)
            VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).execute(arguments: [
            fold.firstEpoch, fold.lastEpoch, fold.intervals, fold.firstAcquired, fold.lastReleased,
            fold.commits,
            fold.commitsOutsideLease, fold.violations, fold.strictViolations,
        ])
        for problem in problems.prefix(max(0, LeaseHistoryFold.keptProblems - fold.problems.count)) {
            try cached(
                "INSERT INTO lease_history_fold_problem (epoch, problem, strictOnly) VALUES (?, ?, ?)"
            ).execute(arguments: [problem.epoch, problem.problem, problem.strictOnly])
        }
        try cached("DELETE FROM lease_history WHERE epoch <= ?").execute(arguments: [last.epoch])
        knownOldestEpoch = next?.epoch ?? knownOldestEpoch
    }
}
