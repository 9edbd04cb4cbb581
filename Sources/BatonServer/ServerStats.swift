import BatonJSON
import BatonLocking

/// Counters the admin API reports: requests served, records served per type, faults injected,
/// write requests committed.
final class ServerStats: Sendable {
    private struct Counts {
        var requests = 0
        var recordsServed: [String: Int] = [:]
        var faults: [String: Int] = [:]
        var writesCommitted = 0
        var waiters: [(counter: Counter, count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        func value(_ counter: Counter) -> Int {
            switch counter {
            case .requests: requests
            case .writesCommitted: writesCommitted
            case .faultsInjected: faults.values.reduce(0, +)
            }
        }

        /// Removes and returns the waiters whose count has been reached.
        mutating func ready() -> [CheckedContinuation<Void, Never>] {
            let counts = self
            let ready = waiters.filter { counts.value($0.counter) >= $0.count }.map(\.continuation)
            waiters.removeAll { counts.value($0.counter) >= $0.count }
            return ready
        }
    }

    /// The counters one can wait on.
    enum Counter: Sendable {
        case requests
        case writesCommitted
        case faultsInjected
    }

    private let counts = Locked(Counts())

    /// Changes the counts, then wakes the waiters whose count has been reached.
    private func count(_ change: (inout Counts) -> Void) {
        let ready = counts.withLock { counts in
            change(&counts)
            return counts.ready()
        }
        for continuation in ready { continuation.resume() }
    }

    func request() {
        count { $0.requests += 1 }
    }

    /// Requests received so far (counted before handling, so a held request counts).
    var requests: Int { counts.withLock { $0.requests } }

    /// Returns once `counter` has reached `count`.
    func wait(for counter: Counter, _ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = counts.withLock { counts -> Bool in
                if counts.value(counter) >= count { return true }
                counts.waiters.append((counter, count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func served(_ count: Int, type: String) {
        counts.withLock { $0.recordsServed[type, default: 0] += count }
    }

    func writeCommitted() {
        count { $0.writesCommitted += 1 }
    }

    var writesCommitted: Int { counts.withLock { $0.writesCommitted } }

    func fault(_ kind: String) {
        count { $0.faults[kind, default: 0] += 1 }
    }

    var faultsInjected: Int { counts.withLock { $0.value(.faultsInjected) } }

    func reset() {
        counts.withLock { counts in
            counts.requests = 0
            counts.recordsServed = [:]
            counts.faults = [:]
            counts.writesCommitted = 0
        }
    }

    /// What `GET /admin/stats` reports (the route adds the stored record counts).
    struct Report: Encodable {
        var requests: Int
        var recordsServed: [String: Int]
        var faultsInjected: [String: Int]
        var writesCommitted: Int
        var records: [String: Int] = [:]
    }

    var report: Report {
        counts.withLock { counts in
            Report(
                requests: counts.requests, recordsServed: counts.recordsServed, faultsInjected: counts.faults,
                writesCommitted: counts.writesCommitted)
        }
    }
}
