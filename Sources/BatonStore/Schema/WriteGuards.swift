import CSQLiteConfig
import GRDB
import GRDBSQLite

/// The store's write guards: every table Baton writes has triggers, before each insert, update
/// and delete, that call `baton_write_guard()`, a function only Baton's connections register. A
/// statement from anything else that would change such a table (`sqlite3` with an `INSERT`)
/// fails as it is prepared, with "no such function: baton_write_guard", and changes nothing.
///
/// A determined user can drop a trigger first, or register a function of that name. Either
/// leaves a trace that ``missing(_:)`` finds: a table without its three triggers, or one
/// whose trigger no longer calls the guard. `baton lease check --strict` fails on it, naming
/// the table, and a participant that becomes the writer logs it and shows it in `baton status`.
///
/// Baton's own connections run no triggers at all (``register(on:)``): the guards are for
/// other connections, and a trigger run for every row Baton writes would cost each page save
/// about a sixth of its time.
package enum WriteGuards {
    /// The function the triggers call.
    package static let functionName = "baton_write_guard"

    /// The statements a trigger guards.
    static let events = ["INSERT", "UPDATE", "DELETE"]

    /// Baton's own tables (soups, `soup_N`, are listed in `soup_registry`).
    package static let storeTables = [
        "soup_registry", "sync_state", "lease_history", "change_sequence", "commit_log", "store_setting",
        "lease_history_fold", "lease_history_fold_problem",
    ]

    /// Makes a connection Baton's: its statements compile no trigger
    /// (`SQLITE_DBCONFIG_ENABLE_TRIGGER` off), so none of the guards runs for the rows it
    /// writes, and it has the guard function (one that does nothing), so a statement that did
    /// compile a guard would pass.
    ///
    /// A trigger is the one way SQLite gives to refuse another connection's write as it is
    /// prepared, but it runs for every row written: a sub-program started for each row and, as
    /// a table with triggers makes every insert or update a possible multi-table write, a
    /// statement transaction around it. Baton's connections need neither: nothing but Baton's
    /// own statements runs on them.
    ///
    /// - Throws: the SQLite error when either cannot be set.
    package static func register(on db: Database) throws {
        let code = sqlite3_create_function_v2(
            db.sqliteConnection, functionName, 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, nil,
            { context, _, _ in sqlite3_result_null(context) }, nil, nil, nil)
        guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
        var enabled: CInt = -1
        let configured = baton_sqlite3_enable_triggers(db.sqliteConnection, 0, &enabled)
        guard configured == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: configured))
        }
        guard enabled == 0 else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE, message: "SQLite left the connection's triggers on")
        }
    }

    /// The name of `table`'s trigger for `event`.
    static func triggerName(_ table: String, _ event: String) -> String {
        "baton_guard_\(table)_\(event.lowercased())"
    }

    /// Creates `table`'s three triggers (those it has already are kept).
    package static func install(on table: String, db: Database) throws {
        for event in events {
            try db.execute(
                sql: """
                    CREATE TRIGGER IF NOT EXISTS \(triggerName(table, event)) BEFORE \(event) ON \(table)
                    BEGIN SELECT \(functionName)(); END
                    """)
        }
    }

    /// The tables Baton writes whose guard is missing or no longer calls the guard, by name,
    /// each with what is wrong.
    package static func missing(_ db: Database) throws -> [(table: String, problem: String)] {
        let soups = try String.fetchAll(db, sql: "SELECT 'soup_' || id FROM soup_registry ORDER BY id")
        let triggers = try Row.fetchAll(
            db, sql: "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
        var byName: [String: (table: String, sql: String)] = [:]
        for row in triggers {
            byName[row["name"]] = (row["tbl_name"], row["sql"] ?? "")
        }
        var found: [(table: String, problem: String)] = []
        for table in storeTables + soups {
            for event in events {
                let name = triggerName(table, event)
                guard let trigger = byName[name] else {
                    found.append((table, "its \(event) guard (trigger \(name)) is gone"))
                    break
                }
                guard trigger.table == table, trigger.sql.contains("\(functionName)()") else {
                    found.append((table, "its \(event) guard (trigger \(name)) was changed"))
                    break
                }
            }
        }
        return found
    }
}

extension SharedStore {
    /// Puts back the write guards something other than Baton dropped or changed (what `baton
    /// store init` does once `baton lease check --strict` named them), under `D/setup.lock` and
    /// outside the lease, as a migration is. Returns the tables whose guards were restored.
    public func restoreWriteGuards() throws -> [String] {
        let setupLock = try FileLock(path: directory.setupLockPath, in: directory)
        try setupLock.lock(timeout: SharedStore.defaultSetupTimeout)
        defer { setupLock.unlock() }
        do {
            return try connections().write { db in
                let tables = try WriteGuards.missing(db).map(\.table)
                for table in tables {
                    for event in WriteGuards.events {
                        try db.execute(sql: "DROP TRIGGER IF EXISTS \(WriteGuards.triggerName(table, event))")
                    }
                    try WriteGuards.install(on: table, db: db)
                }
                return tables
            }
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "restoring the write guards")
        }
    }
}

extension StoreReader {
    /// The tables Baton writes whose write guard is gone or changed, each as "TABLE: what is
    /// wrong" (none in a store only Baton changed; see ``WriteGuards``).
    public func unguardedTables() throws -> [String] {
        try WriteGuards.missing(db).map { "\($0.table): \($0.problem)" }
    }
}
