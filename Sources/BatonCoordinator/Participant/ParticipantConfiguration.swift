import BatonStore
import BatonSync

/// How a participant is set up.
public struct ParticipantConfiguration: Sendable {
    /// The participant's name (1-64 of A-Z a-z 0-9 . _ -, not starting with '.'): one live
    /// process per name in a shared directory.
    public var name: String
    /// `host` or `extension`.
    public var role: ParticipantRole
    /// Higher wins the lease among foreground participants (host 100, extension 10 by default).
    public var priority: Int
    /// The syncs it starts, in order, each time it becomes the writer.
    public var syncs: [ConfiguredSync]
    /// The soups this participant's app uses, registered each time it becomes the writer, under
    /// the lease and before anything else it writes (a soup already registered with these
    /// index specs costs a read, no commit). Starting a process never writes the schema itself.
    public var soups: [SoupSpec]
    /// The lifecycle to start in when no signal file exists yet (then it is written).
    public var initialLifecycle: Lifecycle?
    /// How long a stop may take before the statement in flight is interrupted.
    public var stopDeadline: Duration
    /// How long a stop lets a page being saved run on before it ends the save at the next
    /// record (``SyncManager/endPageSaveEarly()``): a sync that resumes by id keeps the records
    /// saved so far, and its restart fetches the rest of the page. `nil` (the default) finishes
    /// the page, as Mobile Sync does, within ``stopDeadline``. A short grace hands the lease over
    /// sooner.
    public var saveGrace: Duration?
    /// While writer, a configured sync that fails is run again after this delay, doubling on
    /// each failure in a row up to ``maxRetryDelay``; `nil` never retries.
    public var retryDelay: Duration?
    /// The longest delay between retries of a failing configured sync.
    public var maxRetryDelay: Duration
    /// The writer lease's term: the holder renews it every quarter term, and a holder that has
    /// not renewed it for a whole term (frozen, hung) is taken over by a waiting participant.
    public var leaseTerm: Duration
    /// The size in bytes at which `D/logs/<name>.jsonl` rotates to `<name>.jsonl.1` (one old
    /// file kept, so the logs take at most twice this); see ``ParticipantLog``.
    public var logLimit: Int64
    /// What a waiting participant does about a lease holder frozen inside a write transaction
    /// (default: resume it after 2 s; see ``FrozenHolder``).
    public var frozenHolder: FrozenHolder
    /// Clean resync ghosts from the server's deletions since the last clean instead of a
    /// comparison of every id (``SyncManager/cleanResyncGhosts(id:incremental:)``).
    public var incrementalGhostCleaning = false

    /// Makes a configuration; `priority` defaults to the role's (``ParticipantRole/defaultPriority``).
    public init(
        name: String, role: ParticipantRole, priority: Int? = nil, syncs: [ConfiguredSync] = [],
        soups: [SoupSpec] = [], initialLifecycle: Lifecycle? = nil,
        stopDeadline: Duration = .seconds(5), saveGrace: Duration? = nil,
        retryDelay: Duration? = .milliseconds(500),
        maxRetryDelay: Duration = .seconds(30),
        leaseTerm: Duration = .seconds(2),
        logLimit: Int64 = ParticipantLog.defaultLimit, frozenHolder: FrozenHolder = .standard
    ) {
        self.name = name
        self.role = role
        self.priority = priority ?? role.defaultPriority
        self.syncs = syncs
        self.soups = soups
        self.initialLifecycle = initialLifecycle
        self.stopDeadline = stopDeadline
        self.saveGrace = saveGrace
        self.retryDelay = retryDelay
        self.maxRetryDelay = maxRetryDelay
        self.leaseTerm = leaseTerm
        self.logLimit = logLimit
        self.frozenHolder = frozenHolder
    }
}
