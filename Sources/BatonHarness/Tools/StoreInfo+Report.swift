import BatonStore

extension StoreInfo {
    /// What `baton store info` prints.
    public var lines: [String] {
        let info = self
        var lines: [String] = []
        lines.append("store:           \(info.path)")
        lines.append("change sequence: \(info.changeSequence)")
        lines.append("lease epoch:     \(info.leaseEpoch)")
        lines.append("integrity:       \(info.integrity)")
        let syncs = info.syncCounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        lines.append("syncs:           \(syncs.isEmpty ? "none" : syncs.joined(separator: " "))")
        if info.soups.isEmpty {
            lines.append("soups:           none")
        } else {
            lines.append("soups:")
            for soup in info.soups {
                let indexes = soup.indexSpecs.map { "\($0.path):\($0.type.rawValue)" }.joined(separator: ", ")
                lines.append("  \(soup.name)  \(soup.count) records  [\(indexes)]")
            }
        }
        return lines
    }
}
