extension SharedStore {
    /// Registers a soup under the writer lease: a read when it exists with these index specs
    /// already (nothing is committed, so every process may call this at start-up), else one
    /// write fenced by `fence` that creates it or adds the missing indexes.
    ///
    /// A process that is not the writer yet registers its soups when it becomes the writer
    /// (`ParticipantConfiguration.soups` does that). See
    /// ``StoreTransaction/registerSoup(_:indexSpecs:)``.
    ///
    /// - Throws: `invalidName` or `invalidIndexPath` for bad input; `staleEpoch` when the lease
    ///   moved on; ``StoreError`` on a failed write.
    @discardableResult
    public func registerSoup(_ name: String, indexSpecs: [IndexSpec], fence: LeaseFence) async throws
        -> SoupDescription
    {
        if let existing = try registeredSoup(name, indexSpecs: indexSpecs) { return existing }
        return try await write(fence) { try $0.registerSoup(name, indexSpecs: indexSpecs) }
    }

    /// The soup named `name` when it exists and indexes every path of `indexSpecs` already (a
    /// registration would change nothing), else nil. A read.
    ///
    /// - Throws: `invalidName` or `invalidIndexPath` for bad input.
    public func registeredSoup(_ name: String, indexSpecs: [IndexSpec]) throws -> SoupDescription? {
        try Names.validate(name, what: "soup name")
        for spec in indexSpecs { try IndexSpec.validate(path: spec.path) }
        guard let existing = try read({ try $0.soupIfExists(name) }) else { return nil }
        let indexed = Set(existing.indexSpecs.map(\.path))
        return indexSpecs.allSatisfy { indexed.contains($0.path) } ? existing : nil
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
