import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging

/// A child process of `baton bench` (`baton bench-worker`): one contention writer (through the
/// lease or with a busy timeout), a reader of commits, or one sync down measured for peak RSS.
public struct BenchWorker: Sendable {
    /// `lease`, `busy`, `reader` or `syncdown`.
    public var mode: String
    public var dir: String
    public var writes = 200
    /// Lease mode: writes per turn, and the pause before a process asks for its next turn.
    public var burst = 2
    public var pauseMicroseconds = 300
    public var name = "w"
    public var server: String?
    /// Print `ready` once set up, then start when a line arrives on stdin (or it closes).
    public var waitForGo = false

    public init(mode: String, dir: String) {
        self.mode = mode
        self.dir = dir
    }

    /// Runs one worker; `output` prints a line on stdout (the parent reads `ready` and the
    /// JSON result).
    public func run(output: @escaping (String) -> Void) async throws {
        var logger = Logger(label: "baton.bench.worker")
        logger.logLevel = .critical
        let shared = try SharedDirectory(path: dir)
        let store = try SharedStore.open(directory: shared, logger: logger)
        switch mode {
        case "lease", "busy":
            try store.registerSoup("writes", indexSpecs: [])
            var latencies: [Double] = []
            var errors = 0
            let lease = try WriterLease(directory: shared, store: store, name: name)
            if waitForGo {
                output("ready")
                _ = readLine()
            }
            let clock = ContinuousClock()
            let started = clock.now
            var index = 0
            while index < writes {
                // Lease mode takes turns: hold the lease for a burst of writes, release, and let
                // another process go first. Each write's latency runs from when it was ready.
                let ready = clock.now
                do {
                    if mode == "lease" {
                        let held = try await lease.acquire()
                        var readyAt = ready
                        for _ in 0..<min(burst, writes - index) {
                            let row: JSONObject = ["w": .string(name), "i": .int(Int64(index))]
                            try await store.write(held.access) { try $0.upsert(row, into: "writes") }
                            latencies.append(BenchStats.seconds(clock.now - readyAt) * 1000)
                            readyAt = clock.now
                            index += 1
                        }
                        lease.release(held)
                        if pauseMicroseconds > 0 {
                            try await Task.sleep(for: .microseconds(pauseMicroseconds))
                        }
                    } else {
                        let row: JSONObject = ["w": .string(name), "i": .int(Int64(index))]
                        try await store.writeUnleased { try $0.upsert(row, into: "writes") }
                        latencies.append(BenchStats.seconds(clock.now - ready) * 1000)
                        index += 1
                    }
                } catch {
                    if errors == 0 {
                        FileHandle.standardError.write(
                            Data("baton: warning: bench worker \(name): \(error)\n".utf8))
                    }
                    errors += 1
                    index += 1
                }
            }
            output(
                JSONValue.object([
                    "writes": .int(Int64(latencies.count)), "errors": .int(Int64(errors)),
                    "elapsedMs": .double(BenchStats.seconds(clock.now - started) * 1000),
                    "latenciesMs": .array(latencies.map { .double(BenchStats.round($0, 1000)) }),
                ]).jsonString)
        case "reader":
            // Subscribed before it says ready: no commit after that is missed.
            var changes = try store.changes().makeAsyncIterator()
            output("ready")
            var heard: [JSONValue] = []
            while let sequence = await changes.next() {
                heard.append([.int(sequence), .int(Int64(MonotonicClock.nanos()))])
                if sequence >= Int64(writes) { break }
            }
            output(JSONValue.object(["heard": .array(heard)]).jsonString)
        case "syncdown":
            let client = RESTClient(baseURL: server ?? "", token: "bench")
            let manager = SyncManager(
                store: store, access: .unleased, targetFactory: RESTTargetFactory(client: client),
                logger: logger)
            let target = try SoqlSyncDownTarget(
                client: client, query: "SELECT Id, Name, Number__c, Description FROM Account", batchSize: 2000
            )
            let count = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await manager.run() }
                defer { group.cancelAll() }
                let sync = try await manager.syncDown(target: target, soupName: "accounts")
                _ = await manager.waitForSync(id: sync.id)
                return try store.count(in: "accounts")
            }
            // VmHWM is this address space's peak; getrusage's ru_maxrss can carry the spawning
            // parent's peak across fork and exec.
            output(
                JSONValue.object([
                    "records": .int(Int64(count)), "maxRSSKiB": .int(Int64(Self.peakResidentKiB())),
                ])
                .jsonString)
        default:
            throw CLIError(message: "unknown mode \(mode)")
        }
    }

    /// `VmHWM` from /proc/self/status, in KiB.
    static func peakResidentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }
}
