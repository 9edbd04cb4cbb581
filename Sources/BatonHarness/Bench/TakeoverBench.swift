import BatonCoordinator
import BatonStore
import Foundation

/// A writer frozen mid-sync (SIGSTOP) while a peer waits in the foreground: the latency from
/// the SIGSTOP to the peer holding the lease, and to its first committed page, next to the
/// lease term. Then a slow writer (each page request held by the server for 1.5 terms) with a
/// peer waiting for 3 terms: a holder that keeps beating must never be taken over. Both run as
/// `baton participant` processes, as a user runs them.
struct TakeoverBench {
    struct Result {
        var termMs: Double
        var leaseMs: [Double] = []
        var firstPageMs: [Double] = []
        /// Takeovers seen, and those of a holder that was not frozen (must be 0).
        var takeovers = 0
        var falseTakeovers = 0
        /// Trials whose SIGSTOP landed inside a write transaction (no takeover possible).
        var frozenInTransaction = 0
        /// The longest write transaction any participant held (its log's `exited` line).
        var longestTransactionMs = 0.0
    }

    static let term = 2.0

    static func run(_ env: BenchEnvironment, trials: Int) async throws -> Result {
        try await env.reseed(20_000, bytes: 200)
        var result = Result(termMs: term * 1000)
        var directories: [SharedDirectory] = []
        for _ in 0..<trials {
            try await env.client.adminSetFaults(["latencyMs": 20])
            let shared = try env.freshDirectory()
            directories.append(shared)
            try await withStarted { try await frozenTrial(env, shared, into: &result, started: &$0) }
        }
        // Every trial's participants have exited (and logged their longest transaction).
        result.longestTransactionMs = directories.map(longestTransaction(in:)).max() ?? 0
        // The slow holder: pages slower than the term, the peer waiting through three terms.
        try await env.client.adminSetFaults(["latencyMs": .int(Int64(term * 1500))])
        let shared = try env.freshDirectory()
        try await withStarted { try await slowTrial(env, shared, into: &result, started: &$0) }
        try await env.client.adminClearFaults()
        return result
    }

    /// A holder slower than the term, with a peer waiting through three terms.
    static func slowTrial(
        _ env: BenchEnvironment, _ shared: SharedDirectory, into result: inout Result,
        started: inout [ChildProcess]
    ) async throws {
        try await startPair(env, shared, started: &started, firstPage: .seconds(120))
        // Three terms of a slow holder; a takeover, if any, is in the log by then.
        try await Task.sleep(for: .seconds(term * 3))  // wait-ok: the scenario is the wait itself
        let slowTakeovers = ParticipantLogReader.lines(directory: shared, name: "ext")
            .filter { $0.contains("\"lease.takeover\"") }.count
        result.takeovers += slowTakeovers
        result.falseTakeovers += slowTakeovers
    }

    /// One trial: the host syncs, the extension waits, the host is frozen after a page.
    static func frozenTrial(
        _ env: BenchEnvironment, _ shared: SharedDirectory, into result: inout Result,
        started: inout [ChildProcess]
    ) async throws {
        let host = try await startPair(env, shared, started: &started, firstPage: .seconds(60))
        // Frozen just after a page committed (its log line is written after the commit),
        // while the next page is on its way: outside a write transaction, where a takeover
        // is possible. Frozen inside one, nobody can write until it runs again (that case
        // is diagnosed by name, and counted here apart).
        let since = MonotonicClock.millis()
        try await LifecycleBench.waitForLog(shared, "host") {
            $0["event"] == "sync" && ($0["t"]?.doubleValue ?? 0) > since
        }
        await host.send(SIGSTOP)
        let frozen = MonotonicClock.millis()
        let outcome = try await LifecycleBench.waitForLog(shared, "ext") {
            $0["event"] == "lease.takeover" || $0["event"] == "lease.blocked"
        }
        if outcome["event"] == "lease.blocked" {
            result.frozenInTransaction += 1
            await host.send(SIGCONT)
            return
        }
        let takeover = outcome
        let acquired = try await LifecycleBench.waitForLog(shared, "ext") {
            $0["event"] == "lease.acquired"
        }
        let acquiredAt = acquired["t"]?.doubleValue ?? frozen
        let page = try await LifecycleBench.waitForLog(shared, "ext") {
            $0["event"] == "sync" && $0["status"] == "running" && ($0["progress"]?.intValue ?? 0) > 0
                && ($0["t"]?.doubleValue ?? 0) > acquiredAt
        }
        result.leaseMs.append(acquiredAt - frozen)
        result.firstPageMs.append((page["t"]?.doubleValue ?? frozen) - frozen)
        result.takeovers += 1
        if takeover["holderState"]?.stringValue != "stopped" { result.falseTakeovers += 1 }
        await host.send(SIGCONT)
    }

    /// Starts the host, waits for its first page, then starts the extension and waits until it
    /// waits for the lease; returns the host.
    @discardableResult
    static func startPair(
        _ env: BenchEnvironment, _ shared: SharedDirectory, started: inout [ChildProcess], firstPage: Duration
    ) async throws -> ChildProcess {
        let host = try await start(env, shared, "host")
        started.append(host)
        try await LifecycleBench.waitForLog(shared, "host", timeout: firstPage) {
            $0["event"] == "sync" && ($0["progress"]?.intValue ?? 0) > 0
        }
        started.append(try await start(env, shared, "ext"))
        try await LifecycleBench.waitForLog(shared, "ext") { $0["event"] == "lease.waiting" }
        return host
    }

    /// `baton participant NAME` in the foreground with a sync down, logging to the directory.
    static func start(_ env: BenchEnvironment, _ shared: SharedDirectory, _ name: String) async throws
        -> ChildProcess
    {
        try await ChildProcess.start(
            env.baton,
            [
                "participant", "--dir", shared.path, "--name", name, "--role",
                name == "host" ? "host" : "extension",
                "--server", env.server.url, "--lifecycle", "foreground", "--batch-size", "200",
                "--sync-down", "accounts:accounts:SELECT Id, Name FROM Account", "--lease-term", String(term),
            ], environment: ["BATON_TOKEN": "bench"])
    }

    /// The longest write transaction each participant in `shared` reported on exit.
    static func longestTransaction(in shared: SharedDirectory) -> Double {
        var longest = 0.0
        for name in ["host", "ext"] {
            for line in ParticipantLogReader.lines(directory: shared, name: name)
            where line.contains("\"exited\"") {
                let value = (try? JSONObject(parsingObject: String(line)))?["longestTransactionMs"]?
                    .doubleValue
                longest = max(longest, value ?? 0)
            }
        }
        return longest
    }

    /// Runs `body` with a list it adds the processes it starts to; stops them all afterwards,
    /// whether it finished or threw.
    static func withStarted(_ body: (inout [ChildProcess]) async throws -> Void) async throws {
        var started: [ChildProcess] = []
        do {
            try await body(&started)
        } catch {
            await stop(started)
            throw error
        }
        await stop(started)
    }

    /// Wakes and stops (SIGTERM) each process, and waits for them.
    static func stop(_ processes: [ChildProcess]) async {
        for process in processes { await process.terminate() }
    }
}
