/// One record of a soup with the store's bookkeeping.
public struct SoupEntry: Sendable, Hashable {
    /// The store-assigned id, stable for the record's life (SmartStore's `_soupEntryId`).
    public var entryId: Int64
    /// The record.
    public var record: JSONObject
    /// When the store last wrote the record, in milliseconds since 1970.
    public var lastModified: Int64

    public init(entryId: Int64, record: JSONObject, lastModified: Int64) {
        self.entryId = entryId
        self.record = record
        self.lastModified = lastModified
    }
}

/// A registered soup: its name and indexed paths.
public struct SoupDescription: Sendable, Hashable {
    /// The soup's name.
    public var name: String
    /// The indexed paths, in registration order.
    public var indexSpecs: [IndexSpec]
    let tableName: String

    /// The paths every soup indexes for the sync engine, whatever it registered.
    static let builtInPaths = [LocalFlags.local, LocalFlags.syncId]

    /// True when `path` can be used in a query.
    public func isIndexed(_ path: String) -> Bool {
        Self.builtInPaths.contains(path) || indexSpecs.contains { $0.path == path }
    }
}
