import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging

/// A child process of `baton bench` (`baton bench-worker`): one contention writer (through the
/// lease, with a busy timeout, or taking turns through a bare kernel lock), a reader of
/// commits, or one sync down measured for peak RSS.
public struct BenchWorker: Sendable {
    /// `lease` (the strictly fair lease: hand over after every turn), `busy` (SQLite's busy
    /// timeout), `floor` (the same turns through a bare kernel lock, ``KernelLockFloor``),
    /// `reader` or `syncdown`.
    public var mode: String
    public var dir: String
    public var writes = 200
    /// Lease and floor modes: writes per turn, and the pause before a process asks for its next
    /// turn.
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
        // The busy timeout's and the floor's writes are outside the lease, on purpose: they are
        // what the lease is measured against.
        let unfenced = try UnfencedStore.open(directory: shared, logger: logger)
        let store = unfenced.store
        switch mode {
        case "lease", "busy", "floor":
            let lease = try WriterLease(directory: shared, store: store, name: name)
            let floor = mode == "floor" ? try KernelLockFloor(path: dir + "/bench-floor.lock") : nil
            if waitForGo {
                output("ready")
                _ = readLine()
            }
            // Every mode runs on the lease's executor, so they differ only in how they take
            // turns: the lease's waits then block the thread that runs the turn.
            let result = try await withTaskExecutorPreference(lease.executor) {
                try await contend(unfenced, lease: lease, floor: floor)
            }
            output(result.jsonString)
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
                unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: logger)
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

    /// The contention loop: `writes` small writes, each timed from when it was ready to its
    /// commit. `lease` and `floor` take turns of `burst` writes and pause before asking again;
    /// `busy` writes one at a time and lets SQLite's busy timeout sort out who goes.
    private func contend(
        _ unfenced: UnfencedStore, lease: WriterLease, floor: KernelLockFloor?
    ) async throws -> JSONValue {
        var latencies: [Double] = []
        var errors = 0
        let clock = ContinuousClock()
        let started = clock.now
        var index = 0
        func row() -> JSONObject { ["w": .string(name), "i": .int(Int64(index))] }
        // Each turn of the lease and floor modes: when it was granted, when its writes were
        // done and when its release returned (`CLOCK_MONOTONIC` ns, shared by every process),
        // so a turn can be taken apart into its hold and the hand-over after it.
        var turns: [JSONValue] = []
        while index < writes {
            let ready = clock.now
            do {
                if mode == "busy" {
                    let row = row()
                    try await unfenced.write { try $0.upsert(row, into: "writes") }
                    latencies.append(BenchStats.seconds(clock.now - ready) * 1000)
                    index += 1
                } else {
                    // A turn: the lease, or the floor's bare kernel lock, around the same writes.
                    let held = mode == "lease" ? try await lease.acquire() : nil
                    if held == nil { try floor?.lock() }
                    let granted = MonotonicClock.nanos()
                    defer {
                        let written = MonotonicClock.nanos()
                        if let held { lease.release(held) } else { floor?.unlock() }
                        turns.append([
                            .int(Int64(granted)), .int(Int64(written)), .int(Int64(MonotonicClock.nanos())),
                        ])
                    }
                    var readyAt = ready
                    for _ in 0..<min(burst, writes - index) {
                        let row = row()
                        if let held {
                            try await unfenced.store.write(held.fence) { try $0.upsert(row, into: "writes") }
                        } else {
                            try Self.writeNow(row, unfenced)
                        }
                        latencies.append(BenchStats.seconds(clock.now - readyAt) * 1000)
                        readyAt = clock.now
                        index += 1
                    }
                }
                if mode != "busy", pauseMicroseconds > 0 {
                    try await Task.sleep(for: .microseconds(pauseMicroseconds))
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
        return JSONValue.object([
            "writes": .int(Int64(latencies.count)), "errors": .int(Int64(errors)),
            "elapsedMs": .double(BenchStats.seconds(clock.now - started) * 1000),
            "latenciesMs": .array(latencies.map { .double(BenchStats.round($0, 1000)) }),
            "turnsNs": .array(turns),
        ])
    }

    /// A write on this thread (the floor's turn, like a lease turn, does not hop to GRDB's queue).
    private static func writeNow(_ row: JSONObject, _ unfenced: UnfencedStore) throws {
        try unfenced.write { try $0.upsert(row, into: "writes") }
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

/// The floor of any lease that hands the store over through the kernel: a bare `flock` on a
/// lock file of its own, taken and let go around a turn's writes (no heartbeat, no epoch, no
/// fence, no wait set up beside the kernel's). It blocks its thread while it waits, which only
/// a bench worker, with nothing else to run, can afford.
final class KernelLockFloor: Sendable {
    private let fd: Int32

    init(path: String) throws {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw CLIError(message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func lock() throws {
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw CLIError(message: "flock: \(String(cString: strerror(errno)))")
            }
        }
    }

    func unlock() { _ = flock(fd, LOCK_UN) }
}
