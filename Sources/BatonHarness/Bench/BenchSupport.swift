import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// Percentiles and timing for the benchmarks.
enum BenchStats {
    /// The p-th percentile (0–100) by nearest rank; 0 for no samples.
    static func percentile(_ samples: [Double], _ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(sorted.count - 1, max(0, rank))]
    }

    static func seconds(_ duration: Duration) -> Double {
        duration.inSeconds
    }

    static func round(_ value: Double, _ places: Double = 10) -> Double {
        (value * places).rounded() / places
    }
}

/// A reference server, a temp directory and helpers the scenarios share.
final class BenchEnvironment: @unchecked Sendable {
    /// The `baton` executable the child processes run.
    let baton: String
    let server: RunningServer
    let client: RESTClient
    let root: String
    var counter = 0

    init(baton: String) async throws {
        self.baton = baton
        var quiet = Logger(label: "baton.bench.server")
        quiet.logLevel = .critical
        server = try await ReferenceServer.start(.init(token: "bench"), logger: quiet)
        client = RESTClient(baseURL: server.url, token: "bench")
        root = FileManager.default.temporaryDirectory.path + "/baton-bench-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// A fresh shared directory.
    func freshDirectory() throws -> SharedDirectory {
        counter += 1
        return try SharedDirectory(path: root + "/d\(counter)")
    }

    /// A store in `shared`, a sync manager on it (writing unleased) and a sync down target for
    /// `query`, as the scenarios that sync down set them up.
    func syncDown(in shared: SharedDirectory, query: String, batchSize: Int) throws -> (
        store: SharedStore, manager: SyncManager, target: SoqlSyncDownTarget
    ) {
        let unfenced = try UnfencedStore.open(directory: shared, logger: quietLogger())
        let manager = SyncManager(
            unfenced: unfenced, targetFactory: RESTTargetFactory(client: client), logger: quietLogger())
        let target = try SoqlSyncDownTarget(client: client, query: query, batchSize: batchSize)
        return (unfenced.store, manager, target)
    }

    func quietLogger() -> Logger {
        var logger = Logger(label: "baton.bench")
        logger.logLevel = .critical
        return logger
    }

    /// Replaces the server's accounts with `count` fresh ones, `tie` per time stamp.
    func reseed(_ count: Int, tie: Int = 1, bytes: Int = 400) async throws {
        try await client.adminReset(type: "Account")
        try await client.adminSeed(
            type: "Account", count: count, timeStamps: max(1, count / max(1, tie)), bytes: bytes)
    }

    func finish(keepingDirectories keep: Bool = false) async {
        await server.stop()
        if !keep { try? FileManager.default.removeItem(atPath: root) }
    }
}
