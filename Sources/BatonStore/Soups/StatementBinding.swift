import Foundation
import GRDB
import GRDBSQLite

/// A page save's statements run through SQLite's own calls, with the values bound in place.
///
/// GRDB's `execute(arguments:)` and `Row.fetchOne(_:arguments:)` take `StatementArguments`, whose
/// initialiser maps the values through a generic sequence that is not specialised across the
/// module boundary, and a fetch builds a row cursor for one row. In `perf` (release build, the
/// bench's eight sync downs at once) those two were about a third of the time a page save spends
/// writing its records: the save is what every sync down's pages wait for, one at a time, in the
/// one writer. The statements stay GRDB's (prepared and cached by it, finalised with the
/// connection); each run here resets them first and leaves no value bound.
extension Statement {
    /// Runs this statement (an INSERT, UPDATE or DELETE) with `values` bound in order.
    ///
    /// - Throws: `DatabaseError` with SQLite's extended result code and message, as GRDB's
    ///   `execute(arguments:)` would (a full disk is `SQLITE_FULL`).
    ///
    /// `text`, when given, is bound first, as text: UTF-8 bytes (a record's JSON as
    /// `JSONTextWriter` wrote it) stored without being made into a `String` first.
    func run(text: [UInt8]? = nil, binding values: [DatabaseValue], in db: Database) throws {
        try bind(values, after: text, in: db)
        let code = sqlite3_step(sqliteStatement)
        defer { release() }
        guard code == SQLITE_DONE else { throw failure(code, in: db) }
    }

    /// The first row's `id`, `json` and `lastModified` columns (in that order), with `value`
    /// bound to the statement's one parameter; nil when there is no row.
    func firstEntry(binding value: DatabaseValue, in db: Database) throws -> (
        entryId: Int64, json: String, lastModified: Int64
    )? {
        try bind([value], in: db)
        defer { release() }
        let code = sqlite3_step(sqliteStatement)
        switch code {
        case SQLITE_DONE: return nil
        case SQLITE_ROW:
            let handle = sqliteStatement
            let bytes = sqlite3_column_text(handle, 1)
            let count = Int(sqlite3_column_bytes(handle, 1))
            let json =
                bytes.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) }
                ?? ""
            return (sqlite3_column_int64(handle, 0), json, sqlite3_column_int64(handle, 2))
        default: throw failure(code, in: db)
        }
    }

    private func bind(_ values: [DatabaseValue], after text: [UInt8]? = nil, in db: Database) throws {
        let handle = sqliteStatement
        // A run that failed was reset by ``release()`` and its error reported then.
        sqlite3_reset(handle)
        let leading = text == nil ? 0 : 1
        guard leading + values.count == Int(sqlite3_bind_parameter_count(handle)) else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message:
                    "\(leading + values.count) values for \(sqlite3_bind_parameter_count(handle)) parameters",
                sql: sql)
        }
        if let text {
            let code = text.withUnsafeBytes { bytes in
                sqlite3_bind_text(
                    handle, 1, (bytes.baseAddress ?? Self.emptyBlob).assumingMemoryBound(to: CChar.self),
                    Int32(bytes.count), Self.transient)
            }
            guard code == SQLITE_OK else {
                let error = failure(code, in: db)
                release()
                throw error
            }
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(leading + offset + 1)
            let code: Int32
            switch value.storage {
            case .null: code = sqlite3_bind_null(handle, index)
            case .int64(let int): code = sqlite3_bind_int64(handle, index, int)
            case .double(let double): code = sqlite3_bind_double(handle, index, double)
            case .string(let string):
                // Up to a NUL, as GRDB binds text (`-1`), so this lookup and a query agree.
                code = sqlite3_bind_text(handle, index, string, -1, Self.transient)
            case .blob(let data):
                code = data.withUnsafeBytes { bytes in
                    sqlite3_bind_blob(
                        handle, index, bytes.baseAddress ?? Self.emptyBlob, Int32(bytes.count), Self.transient
                    )
                }
            }
            guard code == SQLITE_OK else {
                let error = failure(code, in: db)
                release()
                throw error
            }
        }
    }

    /// Resets the statement and unbinds its values (SQLite copied them: nothing dangles).
    private func release() {
        sqlite3_reset(sqliteStatement)
        sqlite3_clear_bindings(sqliteStatement)
    }

    private func failure(_ code: Int32, in db: Database) -> DatabaseError {
        let connection = db.sqliteConnection
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: extended), message: message, sql: sql)
    }

    /// SQLite copies the bytes before the bind returns.
    private static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    }
    /// A pointer for an empty blob or text (a nil pointer would bind NULL).
    private static var emptyBlob: UnsafeRawPointer { UnsafeRawPointer(("" as StaticString).utf8Start) }
}
