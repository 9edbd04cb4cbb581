import BatonCoordinator
import BatonStore
import BatonSync
import Foundation
import Logging

/// The demo's verdict: each check with what it measured.
public struct DemoSummary: Sendable, Encodable {
    struct Check: Encodable {
        var name: String
        var passed: Bool
        var detail: String
    }

    /// What the run measured, each figure once its check has looked at it.
    struct Figures: Encodable {
        var serverRecords: Int?
        var storeRecords: Int?
        var fetched: Int?
        var needed: Int?
        var stopLatencyMs: Double?
        var releaseLatencyMs: Double?
        var handoverLatencyMs: Double?
        var firstPageMs: Double?
        var leaseIntervals: Int?
        var durationMs: Int64?
    }

    var checks: [Check] = []
    var figures = Figures()
    public var passed: Bool { checks.allSatisfy(\.passed) }

    /// Everything the checks look at, read once the script has played.
    struct Observation {
        var records: Int
        var batchSize: Int
        var servedBeforeReturn: Int
        var servedAfterReturn: Int
        var touched: [String]
        /// Changed by a transaction that committed after the run that followed its stamp.
        var committedLate: [String] = []
        var deleted: [String]
        var editedId: String?
        var signals: [(name: String, state: String, t: Double, wall: Int64)]
        var serverRecords: [JSONObject]
        var local: [JSONObject]
        /// The `descriptions` soup: Account's describe and compact layout.
        var descriptions: [JSONObject]
        var hostLog: [JSONObject]
        var extLog: [JSONObject]
        var history: [LeaseRecord]
        /// The store's commit log: every commit must come from the lease holder of its epoch.
        var commits: [CommitRecord]
        var integrity: String
        var durationMs: Int64
    }

    static func check(_ run: DemoRun) async throws -> DemoSummary {
        let shared = try run.directory
        guard let client = run.client else { throw DemoRun.Failure(description: "no server") }
        let store = try SharedStore.open(
            directory: shared, create: false, logger: Logger(label: "baton.demo"))
        return evaluate(
            Observation(
                records: run.records, batchSize: run.batchSize,
                servedBeforeReturn: run.servedBeforeReturn, servedAfterReturn: run.servedAfterReturn,
                touched: run.touched, committedLate: run.committedLate, deleted: run.deleted,
                editedId: run.editedId, signals: run.signals,
                serverRecords: try await client.adminRecords(type: "Account"),
                local: try store.query(.all, in: "accounts").map(\.record),
                descriptions: (try? store.query(.all, in: "descriptions").map(\.record)) ?? [],
                hostLog: DemoRun.readLog(shared, "host"), extLog: DemoRun.readLog(shared, "ext"),
                history: try LeaseHistory.read(store: store, directory: store.directory),
                commits: try await store.read { try $0.commitLog() },
                integrity: try store.info().integrity, durationMs: WallClock.nowMillis() - run.startedWall))
    }

    /// The checks, on what was observed.
    static func evaluate(_ run: Observation) -> DemoSummary {
        var summary = DemoSummary()
        let serverRecords = run.serverRecords
        let local = run.local
        let hostLog = run.hostLog
        let extLog = run.extLog
        // Whole-second stamps can hide an edit (one made in the same second keeps the stamp), so
        // the synced fields are compared, not only the stamps.
        func synced(_ record: JSONObject) -> [JSONValue?] {
            DemoRun.syncedFields.map { record[$0] ?? .null }
        }
        var serverCopies: [String: [JSONValue?]] = [:]
        for record in serverRecords {
            if let id = record["Id"]?.stringValue { serverCopies[id] = synced(record) }
        }
        var localCopies: [String: [JSONValue?]] = [:]
        for record in local {
            if let id = record["Id"]?.stringValue { localCopies[id] = synced(record) }
        }
        let localStamps = localCopies.mapValues { $0.last ?? nil }
        let sameIds = Set(serverCopies.keys) == Set(localCopies.keys) && local.count == localCopies.count
        let stale = serverCopies.filter { id, copy in id != run.editedId && localCopies[id] != copy }.count
        summary.add(
            "records match", sameIds && stale == 0,
            "server \(serverRecords.count), store \(local.count), differing records \(stale)")
        summary.figures.serverRecords = serverRecords.count
        summary.figures.storeRecords = local.count

        // Refetch overhead of the stop and resume: at most the page in flight, however many
        // records share a stamp. (The extension's ghost check also listed every id once: that is
        // not refetching.)
        let overhead = run.servedBeforeReturn - 2 * run.records
        summary.add(
            "refetch overhead", overhead >= 0 && overhead <= run.batchSize,
            "fetched \(run.servedBeforeReturn - run.records) for \(run.records) needed: \(overhead) extra (allowed: one page of \(run.batchSize))"
        )
        summary.figures.fetched = run.servedBeforeReturn - run.records
        summary.figures.needed = run.records

        // reSync after done: only the changed records (plus the ghost check's id list).
        let idFetch = run.records - run.deleted.count
        let resynced = run.servedAfterReturn - run.servedBeforeReturn - idFetch
        let changed = Set(run.touched + run.committedLate).subtracting(run.deleted).count
        let late = Set(run.committedLate).subtracting(run.deleted).count
        summary.add(
            "reSync fetched only changes", resynced == changed,
            "\(resynced) records refetched for \(changed) changed (and not deleted) on the server, \(late) of them committed late"
        )

        let ghostsLeft = run.deleted.filter { localStamps[$0] != nil }.count
        summary.add(
            "ghosts cleaned", ghostsLeft == 0,
            "\(run.deleted.count) deleted on the server, \(ghostsLeft) left locally")

        let edited = run.editedId.flatMap { id in serverRecords.first { $0["Id"]?.stringValue == id } }
        summary.add(
            "local edit synced up", edited?["Name"] == "Edited in the demo",
            edited == nil ? "no edited record found" : "the server has the edited name")

        let describe = run.descriptions.first { $0["Id"] == "Account" }
        let layout = run.descriptions.first { $0["Id"] == "Account-Compact" }
        let layoutItems = layout.flatMap {
            JSONValue.object($0).value(atPath: "sections")?.arrayValue?.first?.value(atPath: "layoutRows")?
                .arrayValue?.first?.value(atPath: "layoutItems")?.arrayValue?.count
        }
        summary.add(
            "describe and layout synced",
            run.descriptions.count == 2 && describe?["keyPrefix"] == "001" && (layoutItems ?? 0) > 0,
            "\(run.descriptions.count) records in descriptions: Account's describe \(describe == nil ? "missing" : "with \(describe?["fields"]?.arrayValue?.count ?? 0) fields"), its compact layout \(layoutItems.map { "with \($0) items in its first row" } ?? "missing")"
        )

        // Latencies, from the signal's write to what the logs recorded (CLOCK_MONOTONIC).
        let background = run.signals.first { $0.name == "host" && $0.state == "background" }
        let stopMs = hostLog.first { $0["event"] == "stopped" }?["stopMs"]?.doubleValue
        let released = hostLog.first { $0["event"] == "lease.released" && $0["reason"] == "background" }?[
            "t"]?.doubleValue
        if let background, let stopMs, let released {
            let releaseMs = released - background.t
            summary.add(
                "stop latency", releaseMs < 2_000,
                String(
                    format: "stop took %.1f ms; lease released %.1f ms after the signal", stopMs, releaseMs))
            summary.figures.stopLatencyMs = (stopMs * 10).rounded() / 10
            summary.figures.releaseLatencyMs = (releaseMs * 10).rounded() / 10
        } else {
            summary.add("stop latency", false, "the host's log has no stop and release")
        }
        let acquired = extLog.first { $0["event"] == "lease.acquired" }?["t"]?.doubleValue
        let firstPage = extLog.first { event in
            event["event"] == "sync" && event["status"] == "running" && (event["progress"]?.intValue ?? 0) > 0
                && (event["t"]?.doubleValue ?? 0) > (acquired ?? .infinity)
        }?["t"]?.doubleValue
        if let background, let acquired, let firstPage {
            let handover = acquired - background.t
            summary.add(
                "hand-over latency", handover < 5_000,
                String(
                    format:
                        "extension held the baton %.1f ms after the signal, first page committed at %.1f ms",
                    handover, firstPage - background.t))
            summary.figures.handoverLatencyMs = (handover * 10).rounded() / 10
            summary.figures.firstPageMs = ((firstPage - background.t) * 10).rounded() / 10
        } else {
            summary.add("hand-over latency", false, "the extension's log has no lease and first page")
        }

        let history = run.history
        // As `baton lease check --strict`: no overlap, and every commit by the holder of its epoch,
        // none outside the lease (starting a process writes nothing by itself).
        let violations =
            LeaseAudit.check(history)
            + LeaseAudit.checkCommits(run.commits, history: history, strict: true).violations
        summary.add(
            "lease history", violations.isEmpty && history.count >= 4,
            violations.isEmpty
                ? "\(history.count) intervals, epochs increasing, no overlaps; \(run.commits.count) commits, each by the lease holder"
                : violations.map(\.description).joined(separator: "; "))
        summary.figures.leaseIntervals = history.count

        let integrity = run.integrity
        summary.add("integrity check", integrity == "ok", integrity)
        summary.figures.durationMs = run.durationMs
        return summary
    }

    mutating func add(_ name: String, _ passed: Bool, _ detail: String) {
        checks.append(Check(name: name, passed: passed, detail: detail))
    }

    enum CodingKeys: String, CodingKey { case passed, checks }

    /// The figures, `passed` and the checks, in one object.
    public func encode(to encoder: any Encoder) throws {
        try figures.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(passed, forKey: .passed)
        try container.encode(checks, forKey: .checks)
    }

    public var lines: [String] {
        ["", "summary:"]
            + checks.map {
                "  \($0.passed ? "✔" : "✘") \($0.name.padding(toLength: 28, withPad: " ", startingAt: 0)) \($0.detail)"
            }
            + [
                "",
                passed
                    ? "all \(checks.count) checks passed"
                    : "\(checks.filter { !$0.passed }.count) of \(checks.count) checks FAILED",
            ]
    }
}
