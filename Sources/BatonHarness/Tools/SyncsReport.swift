import BatonCoordinator
import BatonStore
import BatonSync
import Foundation

/// What `baton syncs` shows: the sync states persisted in a store, with the retries live
/// participants publish. A sync this version cannot read is listed with what is wrong, beside
/// the others.
public struct SyncsReport: Encodable {
    public var syncs: [StoredSync]
    /// Configured syncs a live participant retries, by name: the last failure and the next attempt.
    public var retries: [String: SyncRetry]

    /// Reads the syncs (only those with `status`, when given) of the store in `directory`.
    public static func read(_ store: SharedStore, directory: String, status: SyncStatus?) throws
        -> SyncsReport
    {
        let syncs = try StoredSync.all(store, status: status)
        var retries: [String: SyncRetry] = [:]
        if let shared = try? SharedDirectory(path: directory, create: false) {
            for participant in ParticipantStatus.readAll(in: shared) where participant.isAlive {
                for retry in participant.retrying { retries[retry.name] = retry }
            }
        }
        return SyncsReport(syncs: syncs, retries: retries)
    }

    /// One JSON object per sync, with its `retry` (the last failure and the next attempt) when
    /// a live participant retries it; one this version cannot read has the columns it could
    /// read and `unreadable`, what is wrong.
    public func encode(to encoder: any Encoder) throws {
        try syncs.map { Entry(sync: $0, retry: $0.name.flatMap { retries[$0] }) }.encode(to: encoder)
    }

    struct Entry: Encodable {
        var sync: StoredSync
        var retry: SyncRetry?

        enum Keys: String, CodingKey { case retry }
        func encode(to encoder: any Encoder) throws {
            switch sync {
            case .readable(let state): try state.encode(to: encoder)
            case .unreadable(let unreadable): try unreadable.encode(to: encoder)
            }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(retry, forKey: .retry)
        }
    }

    /// A table, one row per sync.
    public var lines: [String] {
        let header = [
            "ID", "NAME", "TYPE", "TARGET", "SOUP", "STATUS", "PROGRESS", "TOTAL", "REFUSED", "MAXTIMESTAMP",
            "ERROR",
        ]
        let rows = syncs.map { stored in
            let retry = stored.name.flatMap { retries[$0] }
            switch stored {
            case .readable(let sync):
                return [
                    String(sync.id), sync.name ?? "-", sync.type.rawValue,
                    sync.target["type"]?.stringValue ?? "-", sync.soupName, sync.status.rawValue,
                    "\(sync.progress)%",
                    String(sync.totalSize), sync.type == .syncUp ? String(sync.refusedCount) : "-",
                    String(sync.maxTimeStamp),
                    Self.errorColumn(sync.error, retry: retry),
                ]
            case .unreadable(let sync):
                return [
                    String(sync.id), sync.name ?? "-", sync.type, "?", sync.soupName, sync.status, "-", "-",
                    "-", "-",
                    Self.errorColumn("unreadable: \(sync.problem)", retry: retry),
                ]
            }
        }
        // The error column is fitted above, so that the retry after it is always shown whole.
        return Table.render(header: header, rows: rows, maxWidths: [header.count - 1: .max])
    }

    /// The widest the error is shown in the table (cut at a word boundary; `--json` has it whole).
    static let errorWidth = 60

    /// The error (cut at a word boundary to ``errorWidth``), and for a retried sync when the next
    /// attempt starts. For a sync this version cannot read, the error is what is wrong with it
    /// (its stored error names it, at a length the column would cut before the point).
    static func errorColumn(_ error: String?, retry: SyncRetry?) -> String {
        var text = (error ?? retry?.lastError).map { Table.fit($0, width: errorWidth) } ?? ""
        if let retry {
            let time = SyncRetry.clock.string(
                from: Date(timeIntervalSince1970: Double(retry.nextAttempt) / 1000))
            text += (text.isEmpty ? "" : "; ") + "retry \(retry.attempt + 1) at \(time)"
        }
        return text
    }
}
