import BatonCoordinator
import BatonLocking
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging

/// Stop latency (lifecycle file written → lease released and `isStopped()`, from the host's
/// log) with and without a request held in flight by the server (alone, or while the page
/// before it is still being saved), and hand-over latency
/// (background signal → the extension holds the lease and commits its first page).
/// Participants run in this process with the same code `baton participant` runs.
struct LifecycleBench {
    struct Result {
        var stopMs: [Double]
        /// A request held by the server and nothing else: the page before it is saved.
        var requestOnlyStopMs: [Double]
        /// A request held by the server while the page before it is being saved.
        var inFlightStopMs: [Double]
        /// With a request in flight and a save grace of 0: the page being saved ends at once.
        var inFlightCutStopMs: [Double]
        var handoverMs: [Double]
        var firstPageMs: [Double]
    }

    /// What the stop trial holds while it signals.
    enum StopCase: CaseIterable {
        /// Nothing held: the sync is fetching or saving pages at full speed.
        case plain
        /// A page request held by the server, and the page before it already saved: the stop
        /// has only the request to cancel.
        case requestOnly
        /// A page request held by the server, signalled as it arrives: the page before it is
        /// being saved (the sync fetches while it saves), and is finished, the default.
        case inFlight
        /// As `inFlight`, with a save grace of 0: the save ends at its next record.
        case inFlightCut
    }

    static func run(_ env: BenchEnvironment, trials: Int) async throws -> Result {
        try await env.reseed(20_000, bytes: 200)
        try await env.client.adminSetFaults(["latencyMs": 10])
        var result = Result(
            stopMs: [], requestOnlyStopMs: [], inFlightStopMs: [], inFlightCutStopMs: [], handoverMs: [],
            firstPageMs: [])
        for trial in 0..<trials {
            for stopCase in StopCase.allCases {
                let shared = try env.freshDirectory()
                let grace: Duration? = stopCase == .inFlightCut ? .zero : nil
                try await withParticipants(env, shared, names: ["host"], saveGrace: grace) { _ in
                    try LifecycleSignal.write(.foreground, directory: shared, name: "host")
                    try await waitForLog(shared, "host") {
                        $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0
                    }
                    if stopCase != .plain {
                        try await env.client.adminSetFaults(["latencyMs": 3_000])
                        let held = env.server.server.requestCount + 2
                        await env.server.server.waitForRequests(held)
                        if stopCase == .requestOnly {
                            // A page committed after the held request arrived: the sync now
                            // only waits for it. (Should the page before it have committed
                            // first, the next one is held too, and its page before it awaited.)
                            let arrived = MonotonicClock.millis()
                            try await waitForLog(shared, "host") {
                                $0["event"] == "sync" && ($0["t"]?.doubleValue ?? 0) > arrived
                            }
                        }
                    }
                    let signalled = MonotonicClock.millis()
                    try LifecycleSignal.write(.background, directory: shared, name: "host")
                    let released = try await waitForLog(shared, "host") { $0["event"] == "lease.released" }
                    let ms = (released["t"]?.doubleValue ?? signalled) - signalled
                    switch stopCase {
                    case .plain: result.stopMs.append(ms)
                    case .requestOnly: result.requestOnlyStopMs.append(ms)
                    case .inFlight: result.inFlightStopMs.append(ms)
                    case .inFlightCut: result.inFlightCutStopMs.append(ms)
                    }
                }
                try await env.client.adminSetFaults(["latencyMs": 10])
            }
            // Hand-over: the extension waits in the foreground while the host syncs.
            let shared = try env.freshDirectory()
            try await withParticipants(env, shared, names: ["host", "ext"]) { _ in
                try LifecycleSignal.write(.foreground, directory: shared, name: "host")
                try await waitForLog(shared, "host") {
                    $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0
                }
                try LifecycleSignal.write(.foreground, directory: shared, name: "ext")
                try await waitForLog(shared, "ext") { $0["event"] == "lease.waiting" }
                let signalled = MonotonicClock.millis()
                try LifecycleSignal.write(.background, directory: shared, name: "host")
                let acquired = try await waitForLog(shared, "ext") { $0["event"] == "lease.acquired" }
                let acquiredAt = acquired["t"]?.doubleValue ?? signalled
                let page = try await waitForLog(shared, "ext") {
                    $0["event"] == "sync" && $0["status"] == "running" && ($0["progress"]?.intValue ?? 0) > 0
                        && ($0["t"]?.doubleValue ?? 0) > acquiredAt
                }
                result.handoverMs.append(acquiredAt - signalled)
                result.firstPageMs.append((page["t"]?.doubleValue ?? signalled) - signalled)
            }
            _ = trial
        }
        try await env.client.adminClearFaults()
        return result
    }

    /// Runs participants (host first) in this process for the body, then shuts them down.
    static func withParticipants(
        _ env: BenchEnvironment, _ shared: SharedDirectory, names: [String], saveGrace: Duration? = nil,
        _ body: ([Participant]) async throws -> Void
    ) async throws {
        var participants: [Participant] = []
        for name in names {
            let (store, manager, target) = try env.syncDown(
                in: shared, query: "SELECT Id, Name FROM Account", batchSize: 500)
            let configuration = ParticipantConfiguration(
                name: name, role: name == "host" ? .host : .appExtension,
                syncs: [.down(name: "accounts", soup: "accounts", target: target, options: SyncOptions())],
                initialLifecycle: .background, saveGrace: saveGrace)
            participants.append(
                try Participant(
                    configuration: configuration, directory: shared, store: store, manager: manager,
                    logger: env.quietLogger()))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for participant in participants { group.addTask { try await participant.run() } }
            do {
                try await body(participants)
            } catch {
                for participant in participants { participant.shutdown() }
                throw error
            }
            for participant in participants { participant.shutdown() }
            try await group.waitForAll()
        }
    }

    /// Waits (on inotify events in `D/logs`) for the first log line of `name` matching.
    @discardableResult
    static func waitForLog(
        _ shared: SharedDirectory, _ name: String, timeout: Duration = .seconds(60), line: Int = #line,
        _ matches: @escaping @Sendable (JSONObject) -> Bool
    ) async throws -> JSONObject {
        try shared.ensureSubdirectory(shared.logsPath)
        let found = Locked<JSONObject?>(nil)
        // Read as the log grows, each line once: the bench runs in the process it measures, and
        // parsing the whole log on every line written would take CPU from the participants.
        let reader = ParticipantLogReader(directory: shared, name: name)
        let ok = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["logs"], reportsModifications: true
        ).wait(timeout: timeout) {
            for object in reader.newEvents() {
                if matches(object) {
                    found.withLock { $0 = object }
                    return true
                }
            }
            return false
        }
        guard ok, let object = found.withLock({ $0 }) else {
            throw CLIError(
                message: "bench: timed out waiting in \(name)'s log (line \(line), \(shared.path))")
        }
        return object
    }
}
