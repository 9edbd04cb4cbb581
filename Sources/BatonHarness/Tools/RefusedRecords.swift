import BatonStore
import BatonSync

/// What `baton syncs --refused SYNC` lists: a sync up's records that did not go up and carry
/// the reason (`__last_error__`), in its soup and, for a parent-children sync, its children's
/// soup. The sync's ``SyncState/refusedCount`` counts those the server refused in its last run;
/// this lists every such record now, one held back earlier included.
public struct RefusedRecords: Encodable, Sendable {
    /// One record left with an error.
    public struct Record: Encodable, Sendable {
        public var soup: String
        public var entryId: Int64
        /// Its server id (`Id`, or the target's id field), when it has one.
        public var id: String?
        public var error: String
    }

    public var sync: String
    public var refusedCount: Int
    public var records: [Record]

    /// Reads them for the sync named `sync` (or with that id, when no sync has that name).
    ///
    /// - Throws: a ``CLIError`` (exit code 2, a usage error) when there is no such sync, or it is
    ///   a sync down.
    public static func read(_ store: SharedStore, sync: String) throws -> RefusedRecords {
        let state =
            try SyncState.byName(sync, store: store)
            ?? Int64(sync).flatMap { try SyncState.byId($0, store: store) }
        guard let state else {
            throw CLIError(message: "no sync named '\(sync)', nor with that id", exitCode: 2)
        }
        guard state.type == .syncUp else {
            throw CLIError(
                message: "--refused lists a sync up's refused records; '\(sync)' is a sync down", exitCode: 2)
        }
        var soups = [(state.soupName, state.target["idFieldName"]?.stringValue ?? "Id")]
        if let children = state.target["children"]?.objectValue, let soup = children["soupName"]?.stringValue
        {
            soups.append((soup, children["idFieldName"]?.stringValue ?? "Id"))
        }
        if let parent = state.target["parent"]?.objectValue, let idField = parent["idFieldName"]?.stringValue
        {
            soups[0].1 = idField
        }
        let records = try store.read { reader -> [Record] in
            var records: [Record] = []
            for (soup, idField) in soups where try reader.soupIfExists(soup) != nil {
                try reader.forEachPage(of: SoupQuery(where: [.exact(LocalFlags.local, true)]), in: soup) {
                    entries in
                    for entry in entries {
                        guard let error = entry.record[LocalFlags.lastError], error != .null else { continue }
                        records.append(
                            Record(
                                soup: soup, entryId: entry.entryId, id: entry.record[idField]?.stringValue,
                                error: error.stringValue ?? error.jsonString))
                    }
                    return true
                }
            }
            return records
        }
        return RefusedRecords(
            sync: state.name ?? String(state.id), refusedCount: state.refusedCount, records: records)
    }

    /// A line for the count, then a table: soup, entry id, server id, error.
    public var lines: [String] {
        let count = "\(sync): \(refusedCount) refused in its last run"
        guard !records.isEmpty else { return ["\(count); no record carries an error"] }
        return ["\(count); \(records.count) records not synced, with their errors:"]
            + Table.render(
                header: ["SOUP", "ENTRY", "ID", "ERROR"],
                rows: records.map { [$0.soup, String($0.entryId), $0.id ?? "-", $0.error] },
                maxWidths: [3: .max])
    }
}
