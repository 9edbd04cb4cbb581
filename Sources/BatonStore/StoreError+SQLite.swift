import GRDB

extension StoreError {
    static func from(_ error: DatabaseError, context: String) -> StoreError {
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return StoreError(
                .notADatabase,
                "\(context): the file is not a SQLite database; move it away or use another --dir")
        case .SQLITE_BUSY:
            return StoreError(
                .busy, "\(context): another process holds the store's write lock (database is locked)")
        case .SQLITE_INTERRUPT:
            return StoreError(.interrupted, "\(context): the statement was interrupted and rolled back")
        case .SQLITE_CORRUPT:
            return StoreError(
                .notADatabase, "\(context): the database file is corrupt; restore it from a backup")
        default:
            // The SQL is kept (it is diagnostic); arguments, which may hold record data, are not.
            let sql = error.sql.map { " (SQL: \($0))" } ?? ""
            return StoreError(
                .database,
                "\(context): SQLite error \(error.resultCode.rawValue): \(error.message ?? "unknown")\(sql)")
        }
    }
}
