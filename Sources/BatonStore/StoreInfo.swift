import Foundation

/// A summary of a store, as `baton store info` prints it.
public struct StoreInfo: Sendable, Hashable, Encodable {
    /// One soup and its record count.
    public struct Soup: Sendable, Hashable, Encodable {
        /// The soup's name.
        public var name: String
        /// How many records the soup holds.
        public var count: Int
        /// The soup's indexed paths, in registration order.
        public var indexSpecs: [IndexSpec]
    }

    /// One file in `D/logs`: a participant's log (`NAME.jsonl`), the one rotated before it
    /// (`NAME.jsonl.1`), or another file kept there.
    public struct LogFile: Sendable, Hashable, Encodable {
        /// The file's name in `D/logs`.
        public var name: String
        /// Its size in bytes.
        public var bytes: Int64
    }

    /// The path of the store file (`D/store.sqlite`).
    public var path: String
    /// Every registered soup.
    public var soups: [Soup]
    /// The change sequence: bumped by every committed write.
    public var changeSequence: Int64
    /// The current lease epoch (0 before anyone took the lease).
    public var leaseEpoch: Int64
    /// How many sync states have each status (`syncs` in JSON).
    public var syncCounts: [String: Int]
    /// `PRAGMA integrity_check`: `"ok"` when sound.
    public var integrity: String
    /// The lease history's and the commit log's sizes.
    public var leaseHistory: LeaseHistorySize
    /// The regular files in `D/logs`, by name (none when it does not exist).
    public var logs: [LogFile]

    enum CodingKeys: String, CodingKey {
        case path, soups, changeSequence, leaseEpoch, integrity, leaseHistory, logs
        case syncCounts = "syncs"
    }
}

extension SharedStore {
    /// Reads the summary from one snapshot, and the sizes of the files in `D/logs`.
    public func info() throws -> StoreInfo {
        try read { reader in
            let soups = try reader.soups().map { soup in
                StoreInfo.Soup(
                    name: soup.name, count: try reader.count(in: soup.name), indexSpecs: soup.indexSpecs)
            }
            return StoreInfo(
                path: directory.storePath, soups: soups, changeSequence: try reader.changeSequence(),
                leaseEpoch: try reader.leaseEpoch(), syncCounts: try reader.syncStatusCounts(),
                integrity: try reader.integrityCheck(), leaseHistory: try LeaseHistorySize(reading: reader),
                logs: Self.logFiles(in: directory.logsPath))
        }
    }

    /// The regular files in `path` (symlinks and directories left out), by name.
    static func logFiles(in path: String) -> [StoreInfo.LogFile] {
        // A link where the directory should be is not followed: no log files there.
        var directory = stat()
        guard lstat(path, &directory) == 0, directory.st_mode & S_IFMT == S_IFDIR else { return [] }
        // A directory that cannot be listed has no log files to report.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().compactMap { name in
            var status = stat()
            guard lstat(path + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                return nil
            }
            return StoreInfo.LogFile(name: name, bytes: Int64(status.st_size))
        }
    }
}
