/// Everything the store refuses, with what to do about it.
///
/// Messages never contain record contents or tokens: they name soups, paths and files only.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is; stable for scripts and tests.
    public enum Code: String, Sendable {
        case unsafeDirectory = "unsafe_directory"
        case directoryUnavailable = "directory_unavailable"
        case notADatabase = "not_a_database"
        case schemaTooNew = "schema_too_new"
        case unknownSoup = "unknown_soup"
        case soupExists = "soup_exists"
        case invalidName = "invalid_name"
        case invalidIndexPath = "invalid_index_path"
        case notIndexed = "not_indexed"
        case malformedRecord = "malformed_record"
        case entryNotFound = "entry_not_found"
        case unknownSync = "unknown_sync"
        case duplicateSyncName = "duplicate_sync_name"
        case staleEpoch = "stale_epoch"
        /// The store file was deleted, renamed or replaced while open; this process no longer writes.
        case storeFileChanged = "store_file_changed"
        case interrupted
        /// Another process held the store's write lock past the wait allowed.
        case busy
        case database
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence: what happened and what to do next.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
