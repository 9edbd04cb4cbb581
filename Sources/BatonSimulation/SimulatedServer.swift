import BatonSync

/// The server's accounts on Salesforce's clock: whole-second stamps, one stamp for every record
/// of a transaction, taken when the transaction begins, and visible only once it commits, which
/// may be long after (a late commit stamped before records already visible).
struct SimulatedServer {
    /// What is visible: each account's `LastModifiedDate` (ms).
    var records: [String: Int64] = [:]
    /// Transactions begun and not committed: their accounts and stamp.
    var pending: [Int: (ids: [String], stamp: Int64)] = [:]
    var lastTransaction = 0

    static func stamp(wallMillis: Int64) -> Int64 { wallMillis / 1000 * 1000 }

    mutating func begin(ids: [String], stamp: Int64) -> Int {
        lastTransaction += 1
        pending[lastTransaction] = (ids, stamp)
        return lastTransaction
    }

    mutating func commit(_ transaction: Int) {
        guard let (ids, stamp) = pending.removeValue(forKey: transaction) else { return }
        for id in ids { records[id] = stamp }
    }

    mutating func commitAll() {
        for transaction in pending.keys.sorted() { commit(transaction) }
    }

    /// `WHERE LastModifiedDate >= since AND Id > afterId ORDER BY Id`, as visible now (the
    /// query's cursor keeps this snapshot for its pages).
    func query(since: Int64?, afterId: String?) -> [(id: String, stamp: Int64)] {
        records.filter { id, stamp in
            stamp >= (since ?? .min) && afterId.map { id > $0 } != false
        }.map { ($0.key, $0.value) }.sorted { $0.id < $1.id }
    }
}

/// The sync down `accounts` in the store: its position (``SyncDownPosition``, the engine's
/// rule for where a run starts and the next one will), its newest stamp saved, and the soup.
struct SimulatedAccounts {
    var position = SyncDownPosition()
    var maxTimeStamp: Int64 = 0
    var soup: [String: Int64] = [:]
    /// When a run last completed, the `since` it had asked from, and when its query was made
    /// (nil: it resumed a run stopped earlier, whose query came before).
    var completedAt: UInt64 = 0
    var lastSince: Int64?
    var lastQueriedAt: UInt64?
}

/// A writer's run of `accounts`: the query's snapshot, fetched page by page.
struct AccountsRun {
    var position: SyncDownPosition
    var maxTimeStamp: Int64
    var since: Int64?
    /// When its query was made, unless it resumes a run stopped earlier.
    var queriedAt: UInt64?
    var snapshot: [(id: String, stamp: Int64)] = []
    var next = 0
    var page: [(id: String, stamp: Int64)] = []
    /// The snapshot is all saved: this transaction completes the run.
    var completing = false
}

extension Simulation {
    static let accountsPageSize = 5
    static let accountsOverlap: Duration = .seconds(600)

    /// 60 accounts an hour old, three to a stamp.
    func seedServer() {
        let hourAgo = SimulatedServer.stamp(wallMillis: wallMillis) - 3_600_000
        for index in 0..<60 {
            let id = "001" + String(repeating: "0", count: 3 - String(index).count) + String(index)
            server.records[id] = hourAgo + Int64(index / 3) * 1000
        }
    }

    /// A server transaction edits 1-10 accounts; most commit within milliseconds, some seconds
    /// later, stamped when they began.
    func serverEdit() -> UInt64 {
        let ids = server.records.keys.sorted()
        guard !ids.isEmpty else { return 100_000_000 }
        let count = 1 + Int(random.next() % 10)
        let chosen = Set((0..<count).map { _ in ids[Int(random.next() % UInt64(ids.count))] })
        let transaction = server.begin(
            ids: chosen.sorted(), stamp: SimulatedServer.stamp(wallMillis: wallMillis))
        let late = random.next() % 100 < 30
        let delay =
            late ? 200_000_000 + random.next() % 30_000_000_000 : 1_000_000 + random.next() % 50_000_000
        schedule(.serverCommit(transaction), after: delay)
        return 20_000_000 + random.next() % 200_000_000
    }

    /// The next page of `accounts`: the run's query is made at its first page (the server's
    /// clock read just before it), from the position the store holds.
    func nextAccountsPage(_ writer: inout SimulatedParticipant.Writer) {
        var run =
            writer.accounts
            ?? {
                var run = AccountsRun(
                    position: kernel.accounts.position, maxTimeStamp: kernel.accounts.maxTimeStamp)
                let start = run.position.fetchStart(resumesAfterId: true)
                run.since = start.modifiedSince
                run.queriedAt = run.position.run == nil ? now : nil
                let serverTime = SimulatedServer.stamp(wallMillis: wallMillis)
                run.snapshot = server.query(since: start.modifiedSince, afterId: start.afterId)
                run.position = run.position.started(serverTime: serverTime, resumesAfterId: true)
                return run
            }()
        run.page = Array(run.snapshot[min(run.next, run.snapshot.count)...].prefix(Self.accountsPageSize))
        run.completing = run.page.isEmpty
        writer.accounts = run
    }

    /// An `accounts` page committed: its records, the position after them and the newest stamp
    /// go into the store with it; or, at the end, the completed position.
    func accountsCommitted(_ writer: inout SimulatedParticipant.Writer) {
        guard var run = writer.accounts else { return }
        if run.completing {
            var completed = run.position.completed(overlap: Self.accountsOverlap)
            if options.mutation == .resumeMarkFromRecords {
                completed.modifiedSince = run.maxTimeStamp
            }
            kernel.accounts.position = completed
            kernel.accounts.completedAt = now
            kernel.accounts.lastSince = run.since
            kernel.accounts.lastQueriedAt = run.queriedAt
            writer.accounts = nil
            if let first = writer.syncs.first, first.name == "accounts" { writer.syncs[0].pages = 1 }
            return
        }
        for record in run.page {
            kernel.accounts.soup[record.id] = record.stamp
            run.maxTimeStamp = max(run.maxTimeStamp, record.stamp)
        }
        run.position = run.position.saved(through: run.page.last?.id, resumesAfterId: true)
        run.next += run.page.count
        kernel.accounts.position = run.position
        kernel.accounts.maxTimeStamp = run.maxTimeStamp
        writer.accounts = run
    }
}
