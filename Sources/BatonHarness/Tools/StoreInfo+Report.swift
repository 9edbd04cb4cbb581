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
        lines.append("lease history:   \(info.leaseHistory.line)")
        lines.append("commit log:      \(info.leaseHistory.commitLog) commits")
        if info.logs.isEmpty {
            lines.append("logs:            none")
        } else {
            let total = info.logs.reduce(0) { $0 + $1.bytes }
            lines.append("logs:            \(ByteCount.text(total)) in \(info.logs.count) file(s)")
            let width = info.logs.map(\.name.count).max() ?? 0
            for file in info.logs {
                lines.append(
                    "  \(file.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(ByteCount.text(file.bytes))"
                )
            }
        }
        return lines
    }
}

extension LeaseHistorySize {
    /// The history's size in one line: `120 intervals (limit 10000); 9880 folded (epochs
    /// 1-9880, 0 violations)`.
    public var line: String {
        var text = "\(intervals) interval\(intervals == 1 ? "" : "s") (limit \(limit))"
        if let first = foldedFirstEpoch, let last = foldedLastEpoch {
            text += "; \(folded) folded (epochs \(first)-\(last), \(foldedViolations) violation(s))"
        }
        return text
    }
}
