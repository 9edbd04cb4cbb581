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
