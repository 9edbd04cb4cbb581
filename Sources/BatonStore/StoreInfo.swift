/// A summary of a store, as `baton store info` prints it.
public struct StoreInfo: Sendable, Hashable, Encodable {
    /// One soup and its record count.
    public struct Soup: Sendable, Hashable, Encodable {
        public var name: String
        public var count: Int
        public var indexSpecs: [IndexSpec]
    }

    public var path: String
    public var soups: [Soup]
    public var changeSequence: Int64
    public var leaseEpoch: Int64
    public var syncCounts: [String: Int]
    /// `PRAGMA integrity_check`: `"ok"` when sound.
    public var integrity: String

    enum CodingKeys: String, CodingKey {
        case path, soups, changeSequence, leaseEpoch, integrity
        case syncCounts = "syncs"
    }
}

extension SharedStore {
    /// Reads the summary from one snapshot.
    public func info() throws -> StoreInfo {
        try read { reader in
            let soups = try reader.soups().map { soup in
                StoreInfo.Soup(
                    name: soup.name, count: try reader.count(in: soup.name), indexSpecs: soup.indexSpecs)
            }
            return StoreInfo(
                path: directory.storePath, soups: soups, changeSequence: try reader.changeSequence(),
                leaseEpoch: try reader.leaseEpoch(), syncCounts: try reader.syncStatusCounts(),
                integrity: try reader.integrityCheck())
        }
    }
}
