import BatonCoordinator
import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

/// Long runs stay within their bounds: the lease history folds its oldest intervals past its
/// limit (and the audit still sees what they held), and the participants' logs rotate.
@Suite("Bounded disk use")
struct BoundedDiskUseTests {
    /// Two participants' leases and logs on one store, handing the lease to each other.
    struct Pair {
        let temp: TemporaryDirectory
        let shared: SharedDirectory
        let store: SharedStore
        let leases: [WriterLease]
        let logs: [ParticipantLog]
        var handOvers = 0

        init(logLimit: Int64) throws {
            temp = try TemporaryDirectory()
            shared = try SharedDirectory(path: temp.path + "/d")
            var quiet = Logger(label: "test")
            quiet.logLevel = .critical
            store = try SharedStore.open(directory: shared, logger: quiet)
            let (store, shared) = (store, shared)
            leases = try ["host", "ext"].map { try WriterLease(directory: shared, store: store, name: $0) }
            logs = try ["host", "ext"].map {
                try ParticipantLog(directory: shared, name: $0, limit: logLimit)
            }
        }

        /// The next participant takes the lease, commits `body` (its first write records the
        /// holding), logs, and releases.
        mutating func handOver(_ body: @escaping @Sendable (StoreTransaction) throws -> Void) async throws {
            let turn = handOvers % 2
            let held = try await leases[turn].acquire(deadline: .now + .seconds(10))
            logs[turn].log("lease.granted", ["epoch": .int(held.epoch)])
            try await store.write(held.fence, body)
            leases[turn].release(held)
            logs[turn].log("lease.released", ["epoch": .int(held.epoch), "n": .int(Int64(handOvers))])
            handOvers += 1
        }

        /// One record updated in place: the store stays small.
        mutating func handOver() async throws {
            let n = Int64(handOvers)
            try await handOver { try $0.upsert(["id": "1", "n": .int(n)], into: "s", externalIdPath: "id") }
        }

        func historySize() throws -> (intervals: Int, fold: LeaseHistoryFold?) {
            try store.read { (try $0.leaseHistoryCount(), try $0.leaseHistoryFold()) }
        }

        /// The size of each file in `D/logs`.
        func logFiles() throws -> [String: Int64] {
            var sizes: [String: Int64] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: shared.logsPath) {
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: shared.logsPath + "/" + name)
                sizes[name] = (attributes[.size] as? NSNumber)?.int64Value
            }
            return sizes
        }
    }

    @Test(
        "10,000 hand-overs under small bounds: the lease history and the logs stay within them, and the strict audit passes",
        .timeLimit(.minutes(10)))
    func tenThousandHandOvers() async throws {
        let historyLimit = 100
        let logLimit: Int64 = 4096
        var pair = try Pair(logLimit: logLimit)
        try await pair.handOver {
            try $0.setLeaseHistoryLimit(historyLimit)
            try $0.registerSoup("s", indexSpecs: [IndexSpec(path: "id", type: .string)])
        }
        var largestHistory = 0
        for round in 1..<10_000 {
            try await pair.handOver()
            if round % 50 == 0 || round > 9_990 {
                largestHistory = max(largestHistory, try pair.historySize().intervals)
                for (name, size) in try pair.logFiles() {
                    #expect(size <= logLimit, "\(name) after \(round) hand-overs")
                }
            }
        }
        #expect(largestHistory <= historyLimit)
        let (intervals, folded) = try pair.historySize()
        let fold = try #require(folded)
        #expect(intervals <= historyLimit && intervals + fold.intervals == 10_000)
        #expect(fold.firstEpoch == 1 && fold.violations == 0 && fold.strictViolations == 0)
        #expect(fold.commits > 0 && fold.commitsOutsideLease == 0)

        let audit = try LeaseAudit.audit(store: pair.store, strict: true)
        #expect(audit.passed, "\(audit.violations.prefix(5))")
        #expect(audit.intervals == intervals && audit.folded == fold && audit.unleased == 0)

        // Each log: the current file and one old one, each within the limit.
        let files = try pair.logFiles()
        #expect(Set(files.keys) == ["host.jsonl", "host.jsonl.1", "ext.jsonl", "ext.jsonl.1"])
        #expect(files.values.allSatisfy { $0 <= logLimit })
        // What they hold is the newest events, whole and in order, up to the last hand-over.
        let released = ParticipantLogReader.events(directory: pair.shared, name: "ext")
            .filter { $0["event"] == "lease.released" }.compactMap { $0["n"]?.intValue }
        #expect(released.last == 9_999)
        #expect(released == Array(stride(from: released.first ?? 0, through: 9_999, by: 2)))
    }

    @Test("a violation in an interval that was folded is still reported, in strict mode too")
    func foldedViolationStillReported() async throws {
        var pair = try Pair(logLimit: ParticipantLog.defaultLimit)
        try await pair.handOver {
            try $0.setLeaseHistoryLimit(10)
            try $0.registerSoup("s", indexSpecs: [IndexSpec(path: "id", type: .string)])
        }
        // The holder lets go, then commits outside the lease before anyone else takes it: a
        // commit after its lease ended, a violation in any mode.
        let turn = pair.handOvers % 2
        let held = try await pair.leases[turn].acquire(deadline: .now + .seconds(10))
        try await pair.store.write(held.fence) { try $0.upsert(["id": "1"], into: "s", externalIdPath: "id") }
        pair.leases[turn].release(held)
        let released = try #require(
            HeartbeatRecord.read(at: pair.shared.writerLockPath)?.closing(of: held.epoch))
        while WallClock.nowMillis() <= released.at {}
        let unfenced = try UnfencedStore.open(directory: pair.shared, logger: Logger(label: "test"))
        try await unfenced.write { try $0.upsert(["id": "2"], into: "s", externalIdPath: "id") }
        pair.handOvers += 1
        // The same store audited before that interval is folded, and after.
        let before = try LeaseAudit.audit(store: pair.store, strict: false)
        #expect(before.violations.map(\.epoch) == [held.epoch])
        for _ in 0..<40 { try await pair.handOver() }
        let fold = try #require(try pair.historySize().fold)
        #expect(fold.epochs.contains(held.epoch) && fold.violations == 1)
        #expect(try await pair.store.read { try $0.leaseHistory() }.allSatisfy { $0.epoch > held.epoch })

        let after = try LeaseAudit.audit(store: pair.store, strict: false)
        #expect(after.violations == before.violations)
        let strict = try LeaseAudit.audit(store: pair.store, strict: true)
        #expect(strict.violations == before.violations)
        #expect(try LeaseAudit.audit(store: pair.store, strict: true).folded?.intervals == fold.intervals)
    }
}
