import BatonStore

/// How `baton store upsert` writes records: into a soup, matched on an external id path, and
/// marked as local changes for sync up when asked (created, or updated when the external id
/// matches a stored record).
public struct RecordUpsert: Sendable {
    public var soup: String
    public var externalIdPath: String?
    public var markLocal: Bool

    public init(soup: String, externalIdPath: String?, markLocal: Bool) {
        self.soup = soup
        self.externalIdPath = externalIdPath
        self.markLocal = markLocal
    }

    public func write(_ records: [JSONObject], in transaction: StoreTransaction) throws {
        for record in records {
            var toWrite = record
            if markLocal {
                let existing = try externalIdPath.flatMap { path in
                    try JSONValue.object(record).value(atPath: path).flatMap {
                        try transaction.entry(where: path, equals: $0, in: soup)
                    }
                }
                toWrite = existing == nil ? LocalFlags.markCreated(record) : LocalFlags.markUpdated(record)
            }
            try transaction.upsert(toWrite, into: soup, externalIdPath: externalIdPath)
        }
    }
}
