import BatonStore

/// How a fetched record meets the store's copy: Mobile Sync's merge modes, and what a fetch that
/// sees a record again (the overlap of ``SyncDownPosition``) must not undo.
package enum FetchedRecordMerge: Sendable, Equatable {
    /// Save the server's copy.
    case write
    /// A local change stands.
    case keepLocal
    /// The store holds exactly this already: nothing to write.
    case unchanged

    /// - A new record is written.
    /// - A locally modified one is kept under `leaveIfChanged`. Under `overwrite` it is kept too
    ///   when an `incremental` run (one asking only for what changed since its lower bound)
    ///   brings the server's copy with the stamp the local one was fetched with: the change was
    ///   made to that very copy, and the run saw it again only because runs overlap. Mobile
    ///   Sync's run, which asks only for newer stamps, would not have fetched it and would keep
    ///   the change for the next sync up. A run that fetches every record overwrites, as Mobile
    ///   Sync's does.
    /// - A clean copy equal to the server's (flags and sync id included) is left as it is.
    package static func decide(
        existing: JSONObject?, fetched: JSONObject, leaveIfChanged: Bool, incremental: Bool,
        dateField: String,
        syncId: Int64
    ) -> FetchedRecordMerge {
        guard let existing else { return .write }
        if LocalFlags.isDirty(existing) {
            if leaveIfChanged { return .keepLocal }
            if incremental, let stamp = fetched[dateField], !stamp.isNull, existing[dateField] == stamp {
                return .keepLocal
            }
            return .write
        }
        return existing == LocalFlags.clean(fetched, syncId: syncId) ? .unchanged : .write
    }
}
