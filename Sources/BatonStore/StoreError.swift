/// Everything the store refuses, with what to do about it.
///
/// Messages never contain record contents or tokens: they name soups, paths and files only.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is; stable for scripts and tests.
    public enum Code: String, Sendable {
        /// The shared directory is not a directory, is owned by another user or is world-writable.
        case unsafeDirectory = "unsafe_directory"
        /// The shared directory or a file in it (the store, a lock file) is missing, or cannot be
        /// created, opened, locked or renamed.
        case directoryUnavailable = "directory_unavailable"
        /// The store file is not a SQLite database, or is corrupt.
        case notADatabase = "not_a_database"
        /// The store was written by a newer Baton, whose schema this version cannot open.
        case schemaTooNew = "schema_too_new"
        /// The store was written by an older Baton, and a read-only open cannot upgrade it.
        case schemaTooOld = "schema_too_old"
        /// No soup of that name is registered.
        case unknownSoup = "unknown_soup"
        /// A soup of that name already exists.
        case soupExists = "soup_exists"
        /// A soup or sync name is empty, longer than 64 characters or has characters not allowed.
        case invalidName = "invalid_name"
        /// An index path is not a dotted identifier, or its index type is unknown.
        case invalidIndexPath = "invalid_index_path"
        /// A query, sort key or external id names a path the soup does not index.
        case notIndexed = "not_indexed"
        /// A stored record is not a JSON object.
        case malformedRecord = "malformed_record"
        /// The soup has no entry with that id.
        case entryNotFound = "entry_not_found"
        /// The sync state no longer exists.
        case unknownSync = "unknown_sync"
        /// A sync of that name already exists.
        case duplicateSyncName = "duplicate_sync_name"
        /// The writer lease moved away from (or was never held by) this process; nothing was written.
        case staleEpoch = "stale_epoch"
        /// The store file was deleted, renamed or replaced while open; this process no longer writes.
        case storeFileChanged = "store_file_changed"
        /// The statement was interrupted (``SharedStore/interrupt()``) and its transaction rolled back.
        case interrupted
        /// Another process held the store's write lock, or `D/setup.lock`, past the wait allowed.
        case busy
        /// A store setting was given a value outside its range.
        case invalidSetting = "invalid_setting"
        /// Any other SQLite failure; the message has SQLite's error code and text.
        case database
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence: what happened and what to do next.
    public var message: String

    /// Makes an error of kind `code` with `message` (one sentence, naming no record contents).
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
