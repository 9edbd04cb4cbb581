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

extension StoreInfo {
    public var jsonValue: JSONValue {
        .object([
            "path": .string(path),
            "changeSequence": .int(changeSequence),
            "leaseEpoch": .int(leaseEpoch),
            "integrity": .string(integrity),
            "syncs": .object(syncCounts.mapValues { .int(Int64($0)) }),
            "soups": .array(
                soups.map { soup in
                    .object([
                        "name": .string(soup.name), "count": .int(Int64(soup.count)),
                        "indexSpecs": .array(
                            soup.indexSpecs.map {
                                .object(["path": .string($0.path), "type": .string($0.type.rawValue)])
                            }),
                    ])
                }),
        ])
    }
}
