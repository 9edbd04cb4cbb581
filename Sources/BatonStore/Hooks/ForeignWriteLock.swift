import BatonLocking
import GRDBSQLite

/// SQLite's write lock on a store, held by a connection of its own, as another process would
/// hold it with `sqlite3 D/store.sqlite` and `BEGIN IMMEDIATE;` (tests and chaos runs only).
package final class ForeignWriteLock: Sendable {
    /// The connection holding the lock, until ``release()``.
    private let connection: Locked<OpaquePointer?>

    /// Opens `path` and takes its write lock, waiting up to `timeout` for a writer in progress.
    package init(path: String, timeout: Duration = .seconds(30)) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nil) == SQLITE_OK
        else {
            sqlite3_close(db)
            throw StoreError(.database, "cannot open \(path) to lock it")
        }
        sqlite3_busy_timeout(db, Int32(timeout.components.seconds * 1000))
        let code = sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        guard code == SQLITE_OK else {
            sqlite3_close(db)
            throw StoreError(
                code == SQLITE_BUSY ? .busy : .database,
                "cannot take the write lock of \(path): SQLite error \(code)")
        }
        connection = Locked(db)
    }

    /// Whether another connection holds the write lock of the store at `path` right now (its
    /// `BEGIN IMMEDIATE` would wait); the lock is let go at once when it was free.
    package static func isHeld(path: String) throws -> Bool {
        do {
            try ForeignWriteLock(path: path, timeout: .zero).release()
            return false
        } catch let error as StoreError where error.code == .busy {
            return true
        }
    }

    /// Commits the empty transaction and closes the connection (once).
    package func release() {
        connection.withLock { db in
            guard let open = db else { return }
            sqlite3_exec(open, "COMMIT", nil, nil, nil)
            sqlite3_close(open)
            db = nil
        }
    }

    deinit { release() }
}
