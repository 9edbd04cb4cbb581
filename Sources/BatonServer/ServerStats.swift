import BatonJSON
import Synchronization

/// Counters the admin API reports: requests served, records served per type, faults injected.
final class ServerStats: Sendable {
    private struct Counts {
        var requests = 0
        var recordsServed: [String: Int] = [:]
        var faults: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())

    func request() {
        counts.withLock { $0.requests += 1 }
    }

    func served(_ count: Int, type: String) {
        counts.withLock { $0.recordsServed[type, default: 0] += count }
    }

    func fault(_ kind: String) {
        counts.withLock { $0.faults[kind, default: 0] += 1 }
    }

    func reset() {
        counts.withLock { $0 = Counts() }
    }

    var json: JSONObject {
        counts.withLock { counts in
            [
                "requests": .int(Int64(counts.requests)),
                "recordsServed": .object(counts.recordsServed.mapValues { .int(Int64($0)) }),
                "faultsInjected": .object(counts.faults.mapValues { .int(Int64($0)) }),
            ]
        }
    }
}
