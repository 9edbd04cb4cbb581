import BatonStore

/// Where a sync down's next fetch starts, and the rule that moves it: what makes an incremental
/// run miss no edit on Salesforce's clock, where time stamps are whole seconds shared by every
/// record of a transaction, and a transaction's records, stamped when it starts, become visible
/// only when it commits (after records stamped later).
///
/// Mobile Sync keeps the newest stamp it saved and asks for `LastModifiedDate > maxTimeStamp`.
/// That misses a record edited in the same second as the newest one, and a record whose
/// transaction committed after a later-stamped record was fetched. Baton instead asks for
/// `LastModifiedDate >= modifiedSince`, where `modifiedSince` comes from the server's clock:
///
/// - **Invariant.** Every record the target's query matches that the store does not hold as the
///   server has it was stamped at or after ``modifiedSince`` (everything, when it is nil).
/// - **A complete run keeps it.** A run reads the server's clock (`serverTime`, the `Date` of the
///   answer to a request sent before its query) and then fetches every record stamped at or after
///   ``modifiedSince`` that is visible when its query starts. A record it missed became visible
///   later: its transaction committed after `serverTime`, so, when no transaction commits more
///   than `overlap` after its stamp, it was stamped after `serverTime - overlap`. The next run
///   may therefore start at `max(modifiedSince, serverTime - overlap)`. An edit made while the
///   query is paged has a later stamp still, so it is fetched again by the next run.
/// - **A stopped run resumes exactly.** The fetch is ordered by the record id, which no edit
///   changes, and every saved page records the last id saved with it; the run resumes after that
///   id with the same `modifiedSince`, refetching at most the page that was in flight, however
///   many records share a stamp. The run keeps the `serverTime` of its first fetch: a record
///   that became visible while the run was stopped, among the ids already passed, is fetched by
///   the next run.
/// - **Cost.** Each run after the first fetches again the records stamped in the `overlap`
///   before the previous run's start (none once the server's clock has moved on by `overlap`).
public struct SyncDownPosition: Sendable, Hashable {
    /// Every record the query matches that the store lacks, or holds older than the server, was
    /// stamped at or after this (ms since 1970); nil: nothing is known, a run fetches every record.
    public var modifiedSince: Int64?
    /// The run in progress (running, or stopped or failed before its end), if any.
    public var run: Run?

    /// A run that has started and not completed.
    public struct Run: Sendable, Hashable {
        /// The server's clock when the run's first fetch started (ms since 1970); nil when the
        /// target could not tell: the run then leaves ``SyncDownPosition/modifiedSince`` as it is.
        public var serverTime: Int64?
        /// The id of the last record saved, for a target whose fetch is ordered by id: a resumed
        /// run asks for the records after it.
        public var afterId: String?

        /// A run that started at `serverTime` and saved records up to `afterId`.
        public init(serverTime: Int64?, afterId: String? = nil) {
            self.serverTime = serverTime
            self.afterId = afterId
        }
    }

    /// The default overlap: the longest a Salesforce transaction runs (Apex's limit on a
    /// transaction's execution time is 10 minutes, and a Bulk API batch's processing time too).
    public static let defaultOverlap: Duration = .seconds(600)

    /// A position: `modifiedSince` nil for a sync that has fetched nothing yet.
    public init(modifiedSince: Int64? = nil, run: Run? = nil) {
        self.modifiedSince = modifiedSince
        self.run = run
    }

    /// What a run starting (or resuming) now asks its target for: the records stamped at or
    /// after ``modifiedSince``, after the run's last saved id when the target resumes by id.
    public func fetchStart(resumesAfterId: Bool) -> FetchStart {
        FetchStart(modifiedSince: modifiedSince, afterId: resumesAfterId ? run?.afterId : nil)
    }

    /// Once the first page is back, fetched from ``fetchStart(resumesAfterId:)``: a run in
    /// progress of a target that resumes by id goes on, keeping the server time of its first
    /// fetch; otherwise a run starts at `serverTime` (the server's clock when this fetch started).
    public func started(serverTime: Int64?, resumesAfterId: Bool) -> SyncDownPosition {
        var next = self
        if let run, resumesAfterId {
            next.run = run
        } else {
            next.run = Run(serverTime: serverTime)
        }
        return next
    }

    /// Once records up to `lastId` (in the fetch's order) are saved.
    public func saved(through lastId: String?, resumesAfterId: Bool) -> SyncDownPosition {
        guard resumesAfterId, let lastId else { return self }
        var next = self
        next.run = Run(serverTime: run?.serverTime, afterId: lastId)
        return next
    }

    /// Once the run has fetched its last page: the next run starts `overlap` before the server
    /// time this one started at, never before this one's start.
    public func completed(overlap: Duration) -> SyncDownPosition {
        var next = SyncDownPosition(modifiedSince: modifiedSince, run: nil)
        guard let serverTime = run?.serverTime else { return next }
        let since = max(0, serverTime - max(0, overlap.inWholeMilliseconds))
        next.modifiedSince = max(modifiedSince ?? since, since)
        return next
    }
}

/// What a sync down's fetch asks for.
public struct FetchStart: Sendable, Hashable {
    /// Records stamped at or after this (ms since 1970); nil: every record.
    public var modifiedSince: Int64?
    /// Only records after this id, in id order (a run resuming where it stopped); nil: from the
    /// first.
    public var afterId: String?

    /// What to fetch: records stamped at or after `modifiedSince`, after `afterId`.
    public init(modifiedSince: Int64? = nil, afterId: String? = nil) {
        self.modifiedSince = modifiedSince
        self.afterId = afterId
    }

    /// Every record, from the first.
    public static let everything = FetchStart()
}
