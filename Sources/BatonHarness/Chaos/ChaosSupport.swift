import BatonCoordinator
import BatonLocking
import BatonServer
import BatonStore
import Foundation

/// The faults a chaos round injects, one per round. Every block of `allCases.count` rounds
/// holds each kind once (in a seeded order), so a run of 50 rounds meets each kind at least 4 times.
enum ChaosFault: String, CaseIterable, Sendable {
    /// SIGKILL of the writer while a page request is in flight (the server adds latency).
    case killMidPage = "kill-writer-mid-page"
    /// SIGKILL of the writer right after it committed a page.
    case killBetweenPages = "kill-writer-between-pages"
    /// SIGKILL of the writer during a sync up, after the server committed the batch and before
    /// the writer saw the answer.
    case killAfterServerCommit = "kill-writer-after-server-commit"
    /// SIGSTOP of the writer for a while (often with a hand-over requested meanwhile), then SIGCONT.
    case stopAndContinue = "sigstop-sigcont-writer"
    /// 503s from the server.
    case serverError = "server-5xx"
    /// Slow responses.
    case serverLatency = "server-latency"
    /// Connections dropped mid-response.
    case droppedConnection = "server-dropped-connection"
    /// A write commits on the server and its response is lost.
    case droppedAfterCommit = "server-response-dropped-after-commit"
    /// The server stops and starts again on the same port and data (its query cursors are lost).
    case serverRestart = "server-restart"
    /// Junk, oversized, symlinked and unknown lifecycle files, and rapid flips.
    case junkSignals = "junk-signal-burst"
    /// Records changed and deleted on the server while a sync runs.
    case serverEdits = "server-edits-during-sync"
    /// A writer with a 1 ms stop deadline is sent to the background while it saves a large
    /// page: the interrupted page rolls back and must be fetched again, never skipped.
    case stopDeadlineInterrupt = "stop-deadline-interrupt"
    /// The store's disk fills up (SQLite's page limit held at the store's size: pages of records
    /// fail with SQLITE_FULL, small in-place writes still commit) for a while, then has room
    /// again; the writer must finish by itself.
    case diskFull = "disk-full"
    /// SIGSTOP of the writer mid-sync, left frozen while a peer waits: the peer must take the
    /// lease over within the term and finish; 1-3 rounds later SIGCONT, and the woken process
    /// must commit nothing, step down and later serve normally.
    case freezeWriter = "freeze-writer"
    /// The writer stops itself (SIGSTOP) inside a page's write transaction, holding SQLite's
    /// write lock: the waiting peer must name it with its remedy; after SIGCONT the takeover
    /// completes.
    case freezeWriterInTransaction = "freeze-writer-in-transaction"
    /// While a sync runs, one server transaction changes a few hundred records: on Salesforce's
    /// clock they share one stamp, across many pages and the page the sync is on.
    case bulkEditOneStamp = "server-bulk-edit-one-stamp"
    /// A server transaction stamped before the hand-over (updates and creates) stays in flight
    /// across a page of the new writer's sync, or across the next round's hand-over, and then
    /// commits: records older than ones already synced become visible.
    case transactionInFlight = "server-transaction-in-flight"

    /// Whether the round makes local edits first (so a sync up has something to send).
    var needsLocalEdits: Bool { self == .killAfterServerCommit || self == .droppedAfterCommit }
}

/// A deliberate bug the run plants so a test can see each invariant fail (`--sabotage`).
public enum ChaosSabotage: String, CaseIterable, Sendable {
    /// After round 1, a write straight into the store without the lease.
    case unleasedWrite = "unleased-write"
    /// After round 1, a local edit marked clean without being sent (an edit lost).
    case lostEdit = "lost-edit"
    /// After the final settle, a server change the store never sees.
    case serverDrift = "server-drift"
}

/// Hands out the round's faults: each kind once per block, shuffled with the run's generator.
struct FaultBag {
    private var pending: [ChaosFault] = []

    mutating func next(using random: inout SplitMix64) -> ChaosFault {
        if pending.isEmpty { pending = ChaosFault.allCases.shuffled(using: &random) }
        return pending.removeFirst()
    }
}

/// One local write the run made: a unique token in `Name`, and what identifies the record it
/// went to — the local entry, and the server Id (an edit) or the external id (a create).
struct LocalEdit: Sendable {
    var token: String
    var entryId: Int64
    var serverId: String?
    var externalId: String?
}

/// Groups of keys known to name the same record (union-find).
struct SameRecord {
    private var parent: [String: String] = [:]

    mutating func root(_ key: String) -> String {
        var key = key
        while let next = parent[key], next != key {
            parent[key] = parent[next] ?? next
            key = next
        }
        return key
    }

    mutating func link(_ a: String, _ b: String) {
        let (rootA, rootB) = (root(a), root(b))
        if rootA != rootB { parent[rootA] = rootB }
    }
}

/// An invariant that did not hold: where, what, and how to reproduce it.
struct ChaosViolation: Error, CustomStringConvertible {
    var round: Int
    var invariant: String
    var detail: String

    var description: String { "round \(round): \(invariant): \(detail)" }
}

/// Reads a participant's JSON-lines log as it grows (the same file across restarts, and across
/// rotations: the rest of a rotated file is read before the new one).
final class LogTail: Sendable {
    private let reader: ParticipantLogReader
    private let state = Locked<[JSONObject]>([])

    init(path: String) { reader = ParticipantLogReader(path: path) }

    /// Every event so far, reading what was appended since the last call.
    func events() -> [JSONObject] {
        state.withLock { events in
            events += reader.newEvents()
            return events
        }
    }

    /// How many events there are now (a mark to look after).
    var count: Int { events().count }
}

extension JSONObject {
    var event: String? { self["event"]?.stringValue }
}

/// Runs `body`, giving up after `timeout`: true when it finished in time. A body that never
/// finishes (a wait on the server that cannot be cancelled) is left behind, not awaited.
func finishes(within timeout: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    final class Outcome: Sendable {
        let continuation = Locked<CheckedContinuation<Bool, Never>?>(nil)
        func resume(_ value: Bool) { continuation.withLock { $0.take() }?.resume(returning: value) }
    }
    let outcome = Outcome()
    return await withCheckedContinuation { continuation in
        outcome.continuation.withLock { $0 = continuation }
        Task {
            await body()
            outcome.resume(true)
        }
        Task {
            try? await Task.sleep(for: timeout)
            outcome.resume(false)
        }
    }
}
