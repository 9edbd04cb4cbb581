extension SharedStore {
    /// Registers a soup in its own transaction, outside any lease (setting the schema up, as
    /// every process does when it starts). See ``StoreTransaction/registerSoup(_:indexSpecs:)``.
    @discardableResult
    public func registerSoup(_ name: String, indexSpecs: [IndexSpec]) throws -> SoupDescription {
        try writeUnleased { try $0.registerSoup(name, indexSpecs: indexSpecs) }
    }

    /// Upserts one record in its own transaction, outside any lease (a store only this process
    /// writes). See ``StoreTransaction/upsert(_:into:entryId:externalIdPath:)``.
    @discardableResult
    public func upsertUnleased(
        _ record: JSONObject, into soupName: String, entryId: Int64? = nil, externalIdPath: String? = nil
    ) throws -> SoupEntry {
        try writeUnleased {
            try $0.upsert(record, into: soupName, entryId: entryId, externalIdPath: externalIdPath)
        }
    }

    /// The records matching `query`.
    public func query(_ query: SoupQuery, in soupName: String) throws -> [SoupEntry] {
        try read { try $0.query(query, in: soupName) }
    }

    /// SQLite's plan for `query`. See ``StoreReader/explain(_:in:)``.
    public func explain(_ query: SoupQuery, in soupName: String) throws -> String {
        try read { try $0.explain(query, in: soupName) }
    }

    /// How many records match `query`.
    public func count(_ query: SoupQuery = .all, in soupName: String) throws -> Int {
        try read { try $0.count(query, in: soupName) }
    }

    /// The record with this entry id, or `nil`.
    public func entry(_ entryId: Int64, in soupName: String) throws -> SoupEntry? {
        try read { try $0.entry(entryId, in: soupName) }
    }
}
