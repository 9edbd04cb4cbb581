import BatonJSON
import Synchronization

/// Counters the admin API reports: requests served, records served per type, faults injected.
final class ServerStats: Sendable {
    private struct Counts {
        var requests = 0
        var recordsServed: [String: Int] = [:]
        var faults: [String: Int] = [:]
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let counts = Mutex(Counts())

    func request() {
        let ready = counts.withLock { counts -> [CheckedContinuation<Void, Never>] in
            counts.requests += 1
            let total = counts.requests
            let ready = counts.waiters.filter { $0.count <= total }.map(\.continuation)
            counts.waiters.removeAll { $0.count <= total }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Requests received so far (counted before handling, so a held request counts).
    var requests: Int { counts.withLock { $0.requests } }

    /// Returns once `count` requests have been received in all.
    func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = counts.withLock { counts -> Bool in
                if counts.requests >= count { return true }
                counts.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func served(_ count: Int, type: String) {
        counts.withLock { $0.recordsServed[type, default: 0] += count }
    }

    func fault(_ kind: String) {
        counts.withLock { $0.faults[kind, default: 0] += 1 }
    }

    func reset() {
        counts.withLock { counts in
            counts.requests = 0
            counts.recordsServed = [:]
            counts.faults = [:]
        }
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
