import BatonStore

/// How `baton store upsert` writes records: into a soup, matched on an external id path, and
/// marked as local changes for sync up when asked (created, or updated when the external id
/// matches a stored record).
///
/// Without an external id path every record is inserted as a new entry. With one, every record
/// must have a value there: a record without one would match nothing and be inserted beside
/// the record it was meant to update, so the whole upsert is refused, naming the record by its
/// position in the input (never its contents).
public struct RecordUpsert: Sendable {
    public var soup: String
    public var externalIdPath: String?
    public var markLocal: Bool

    public init(soup: String, externalIdPath: String?, markLocal: Bool) {
        self.soup = soup
        self.externalIdPath = externalIdPath
        self.markLocal = markLocal
    }

    /// What can be checked before waiting for the writer lease, with a read: the soup exists,
    /// the external id path is indexed in it, and every record has a value there.
    ///
    /// - Throws: `unknownSoup` or `notIndexed` (`StoreError`); a `CLIError` naming the first
    ///   record (by its position, from 1) without an external id.
    public func check(_ records: [JSONObject], in reader: StoreReader) throws {
        let soup = try reader.soup(self.soup)
        if let path = externalIdPath, !soup.isIndexed(path) {
            throw StoreError(
                .notIndexed,
                "external id path '\(path)' is not indexed in soup '\(soup.name)'; add an index spec for it (baton store soup create \(soup.name) --index \(path))"
            )
        }
        try checkIdentified(records)
    }

    /// Throws unless every record has a non-null value at the external id path (when there is one).
    public func checkIdentified(_ records: [JSONObject]) throws {
        guard let path = externalIdPath else { return }
        for (index, record) in records.enumerated() {
            if let value = JSONValue.object(record).value(atPath: path), !value.isNull { continue }
            throw CLIError(
                message:
                    "record \(index + 1) of \(records.count) has no \(path) (the --external-id path), so it would match no record; give every record its \(path), or leave out --external-id to insert the records as new ones"
            )
        }
    }

    public func write(_ records: [JSONObject], in transaction: StoreTransaction) throws {
        try checkIdentified(records)
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
