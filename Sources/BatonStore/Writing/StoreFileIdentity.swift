import BatonLocking
import Foundation

/// One of the store's three files, as this process opened it, changed under it.
///
/// SQLite keeps the store in three files that only make sense together: `store.sqlite`, its
/// write-ahead log `store.sqlite-wal` (commits not yet copied back) and the WAL's index
/// `store.sqlite-shm`, shared by every process in memory. A process that keeps writing after one
/// of them was deleted or replaced writes where nobody else looks (an unlinked log), or into a
/// file that no longer goes with the others: it must stop at once.
public struct StoreFileProblem: Sendable, Hashable, CustomStringConvertible {
    /// Which of the three files.
    public enum File: String, Sendable, Hashable, CaseIterable {
        /// `store.sqlite`, the store.
        case store = ""
        /// `store.sqlite-wal`, the write-ahead log.
        case writeAheadLog = "-wal"
        /// `store.sqlite-shm`, the write-ahead log's shared index.
        case sharedIndex = "-shm"

        var role: String {
            switch self {
            case .store: "the store file"
            case .writeAheadLog: "the store's write-ahead log"
            case .sharedIndex: "the store's shared-memory index"
            }
        }
    }

    /// What happened to it.
    public enum Change: Sendable, Hashable {
        /// Nothing is at its path any more: deleted or renamed.
        case missing
        /// Another file is at its path.
        case replaced
    }

    /// The file.
    public var file: File
    /// What happened to it.
    public var change: Change
    /// Its path.
    public var path: String

    /// Says that `file`, at `path`, went through `change`.
    public init(file: File, change: Change, path: String) {
        self.file = file
        self.change = change
        self.path = path
    }

    public var description: String {
        switch change {
        case .missing: "\(file.role) \(path) was deleted or renamed while this process had it open"
        case .replaced: "\(file.role) \(path) was replaced by another file while this process had it open"
        }
    }
}

/// The identity (device and inode) of the store's three files as this process opened them. A file
/// deleted, renamed or replaced under a running process is detected by comparing them with what
/// the paths name now (three `lstat` calls): such a process must not write.
final class StoreFileIdentity: Sendable {
    /// The store file's path; the other two add `-wal` and `-shm`.
    let path: String
    private let opened = Locked<[StoreFileProblem.File: FileID]>([:])

    struct FileID: Sendable, Hashable {
        var dev: UInt64
        var ino: UInt64
    }

    init(path: String) {
        self.path = path
    }

    func path(of file: StoreFileProblem.File) -> String { path + file.rawValue }

    static func stat(_ path: String) -> FileID? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileID(dev: UInt64(info.st_dev), ino: UInt64(info.st_ino))
    }

    /// Records what the paths name now (call once the store is open and has been read, so that
    /// SQLite has opened its write-ahead log and index). A file missing now is not watched.
    func record() {
        var now: [StoreFileProblem.File: FileID] = [:]
        for file in StoreFileProblem.File.allCases { now[file] = Self.stat(path(of: file)) }
        opened.withLock { $0 = now }
    }

    /// What the path of `file` names now, compared with what was opened: nil when it is the
    /// same file (or was never recorded).
    func problem(of file: StoreFileProblem.File) -> StoreFileProblem? {
        guard let opened = opened.withLock({ $0[file] }) else { return nil }
        let path = path(of: file)
        guard let now = Self.stat(path) else {
            return StoreFileProblem(file: file, change: .missing, path: path)
        }
        return now == opened ? nil : StoreFileProblem(file: file, change: .replaced, path: path)
    }

    /// The first of the three files that changed (the store first), or nil when all are as
    /// opened.
    func problem() -> StoreFileProblem? {
        for file in StoreFileProblem.File.allCases {
            if let problem = problem(of: file) { return problem }
        }
        return nil
    }

    /// Whether `file`'s path names the file this process opened.
    func isAsOpened(_ file: StoreFileProblem.File) -> Bool {
        guard let opened = opened.withLock({ $0[file] }) else { return false }
        return Self.stat(path(of: file)) == opened
    }
}
