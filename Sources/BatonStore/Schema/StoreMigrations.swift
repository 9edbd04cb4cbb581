import GRDB

/// The store's schema, as a list of migrations that only ever grows: a shipped migration is
/// never edited, a change is a new migration appended at the end.
enum StoreMigrations {
    /// Brings the store's schema up to date. Runs only when some migration is missing (a new
    /// store, or one written by an older Baton): opening an up-to-date store writes nothing.
    ///
    /// Migrations run outside the writer lease, under `D/setup.lock`, as the process that opens
    /// the store first. That is harmless: they only create or add, or drop a table whose content
    /// another table holds too (a migration is never edited, and none rewrites records),
    /// SQLite's write lock serializes them with any writer, they are not in the commit log (so
    /// the lease audit sees no commit outside the lease), and each runs once per store.
    ///
    /// - Throws: `schemaTooNew` when a newer Baton wrote the store.
    static func migrateIfNeeded(_ pool: DatabasePool, directory: SharedDirectory, readOnly: Bool = false)
        throws
    {
        let migrator = Self.migrator
        let (superseded, complete) = try pool.read { db in
            (try migrator.hasBeenSuperseded(db), try migrator.hasCompletedMigrations(db))
        }
        if superseded {
            throw StoreError(
                .schemaTooNew,
                "the store in \(directory.path) was written by a newer Baton; upgrade baton to open it")
        }
        if !complete, readOnly {
            throw StoreError(
                .schemaTooOld,
                "the store in \(directory.path) was written by an older Baton; start a participant there or run `baton store init --dir \(directory.path)` to upgrade it"
            )
        }
        if !complete { try migrator.migrate(pool) }
    }

    /// The store's migrations, in order; each is a function below.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: createTables)
        migrator.registerMigration("v2-commit-log", migrate: addCommitLog)
        migrator.registerMigration("v3-index-columns", migrate: moveIndexesToColumns)
        migrator.registerMigration("v4-lease-history-fold", migrate: addLeaseHistoryFold)
        migrator.registerMigration("v5-lease-epoch-in-history", migrate: moveLeaseEpochIntoHistory)
        migrator.registerMigration("v6-sync-down-position", migrate: addSyncDownPosition)
        migrator.registerMigration("v7-write-guards", migrate: addWriteGuards)
        migrator.registerMigration("v8-refused-count", migrate: addRefusedCount)
        migrator.registerMigration("v9-ghost-cleaning-marks", migrate: addGhostCleaningMarks)
        return migrator
    }

    /// The first schema: the soups' registry, sync states, the lease and its history, and the
    /// change sequence readers watch.
    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE soup_registry (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL UNIQUE,
                    indexSpecs TEXT NOT NULL,
                    created INTEGER NOT NULL
                );
                CREATE TABLE sync_state (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT UNIQUE,
                    type TEXT NOT NULL,
                    target TEXT NOT NULL,
                    options TEXT NOT NULL,
                    soupName TEXT NOT NULL,
                    status TEXT NOT NULL,
                    progress INTEGER NOT NULL DEFAULT 0,
                    totalSize INTEGER NOT NULL DEFAULT -1,
                    maxTimeStamp INTEGER NOT NULL DEFAULT -1,
                    startTime INTEGER,
                    endTime INTEGER,
                    error TEXT
                );
                CREATE INDEX sync_state_status ON sync_state(status);
                CREATE TABLE lease (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    epoch INTEGER NOT NULL
                );
                INSERT INTO lease (id, epoch) VALUES (1, 0);
                CREATE TABLE lease_history (
                    epoch INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    pid INTEGER NOT NULL,
                    acquired INTEGER NOT NULL,
                    released INTEGER,
                    releaseKind TEXT
                );
                CREATE TABLE change_sequence (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    seq INTEGER NOT NULL
                );
                INSERT INTO change_sequence (id, seq) VALUES (1, 0);
                """)
    }

    /// The commit log: one row per committed write transaction (the newest 10,000), so an
    /// audit can prove every commit came from the lease holder of its time.
    static func addCommitLog(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE commit_log (
                    seq INTEGER PRIMARY KEY,
                    epoch INTEGER NOT NULL,
                    fencedEpoch INTEGER,
                    pid INTEGER NOT NULL,
                    at INTEGER NOT NULL
                );
                """)
    }

    /// Indexed paths move from `json_extract` expression indexes into columns of their own
    /// (see ``SoupDescription``): each soup's table gets its columns, filled from its
    /// records, and their indexes; the expression indexes they replace are dropped.
    static func moveIndexesToColumns(_ db: Database) throws {
        for row in try Row.fetchAll(db, sql: "SELECT id, name, indexSpecs FROM soup_registry") {
            let soup = try StoreReader.soup(from: row)
            for column in soup.columns {
                try db.execute(sql: "DROP INDEX IF EXISTS \(soup.expressionIndexName(path: column.path))")
            }
            try StoreTransaction.addIndexes(soup, existing: [], db: db)
        }
    }

    /// A bounded lease history: store-wide settings (the history's limit, which every process
    /// folds by), the summary that the oldest intervals are folded into, and the problems the
    /// audit found in them when they were folded (the first ones, kept for `lease check`).
    static func addLeaseHistoryFold(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE store_setting (
                    name TEXT PRIMARY KEY,
                    value INTEGER NOT NULL
                );
                CREATE TABLE lease_history_fold (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    firstEpoch INTEGER NOT NULL,
                    lastEpoch INTEGER NOT NULL,
                    intervals INTEGER NOT NULL,
                    firstAcquired INTEGER NOT NULL,
                    lastReleased INTEGER,
                    commits INTEGER NOT NULL,
                    commitsOutsideLease INTEGER NOT NULL,
                    violations INTEGER NOT NULL,
                    strictViolations INTEGER NOT NULL
                );
                CREATE TABLE lease_history_fold_problem (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    epoch INTEGER NOT NULL,
                    problem TEXT NOT NULL,
                    strictOnly INTEGER NOT NULL
                );
                """)
    }

    /// The lease epoch is the history's newest epoch: the single-row `lease` table that
    /// repeated it cost every turn of the lease a page read and a page written. Recording an
    /// epoch always wrote both in one transaction, so they agree; should they not, an
    /// interval closed at once carries the higher epoch over, so no epoch is ever reused. A
    /// Baton from before this migration refuses the store (`schemaTooNew`), and one already
    /// running fails its next lease write on the missing table instead of fencing by a stale
    /// copy.
    static func moveLeaseEpochIntoHistory(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO lease_history (epoch, name, pid, acquired, released, releaseKind)
                    SELECT epoch, '(carried over)', 0, at, at, 'taken-over'
                    FROM lease, (SELECT IFNULL(MAX(COALESCE(released, acquired)), 0) AS at FROM lease_history)
                    WHERE epoch > (SELECT IFNULL(MAX(epoch), 0) FROM lease_history);
                DROP TABLE lease;
                """)
    }

    /// A sync down's position (`SyncDownPosition` in BatonSync): the lower bound of its next
    /// fetch, and the server time and last id of the run in progress. Rows already there keep
    /// NULL, which says they were written before positions (BatonSync's next run of such a
    /// sync fetches every record once); no row is rewritten.
    static func addSyncDownPosition(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE sync_state ADD COLUMN modifiedSince INTEGER;
                ALTER TABLE sync_state ADD COLUMN runServerTime INTEGER;
                ALTER TABLE sync_state ADD COLUMN resumeAfterId TEXT;
                """)
    }

    /// Write guards (``WriteGuards``) on every table Baton writes, soups included: a change made
    /// by anything but Baton's connections fails. A Baton from before this migration refuses
    /// the store (`schemaTooNew`); one already running fails its next write on the guard.
    static func addWriteGuards(_ db: Database) throws {
        let soups = try String.fetchAll(db, sql: "SELECT 'soup_' || id FROM soup_registry ORDER BY id")
        for table in WriteGuards.storeTables + soups { try WriteGuards.install(on: table, db: db) }
    }

    /// A sync up's count of the records the server refused in its last run (0 for rows from
    /// before: their runs are not recounted).
    static func addRefusedCount(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE sync_state ADD COLUMN refusedCount INTEGER NOT NULL DEFAULT 0")
    }

    /// A sync down's clean resync ghosts marks: where the next window of the server's deletions
    /// starts, and when the last full comparison ran (nil for rows from before: their next
    /// clean compares every id).
    static func addGhostCleaningMarks(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE sync_state ADD COLUMN ghostsCoveredUntil INTEGER")
        try db.execute(sql: "ALTER TABLE sync_state ADD COLUMN ghostsFullAt INTEGER")
    }
}
