import BatonJSON
import Synchronization

/// Faults the admin API can switch on, for tests and demos. Counters (`failNext`…) fire on the
/// next N data requests; rates fire at random with a seeded generator, so a run repeats.
public struct FaultSettings: Sendable, Hashable {
    /// Added before every data response, in milliseconds.
    public var latencyMs = 0
    /// Probability (0–1) of a 503 `SERVER_UNAVAILABLE`.
    public var errorRate = 0.0
    /// The next N data requests get a 503.
    public var failNext = 0
    /// The next N data requests have their connection dropped mid-response.
    public var dropConnectionNext = 0
    /// Probability of dropping the connection mid-response.
    public var dropConnectionRate = 0.0
    /// The next N write requests commit, then lose their response (connection dropped).
    public var dropAfterCommitNext = 0
    /// Probability of dropping a write's response after it commits.
    public var dropAfterCommitRate = 0.0
    /// Held after a write commits, before its response goes out, in milliseconds (so a test
    /// can act — kill the client, say — while the server has committed and the client waits).
    public var holdAfterCommitMs = 0
    /// Seed of the generator behind the rates.
    public var seed: UInt64 = 1

    public init() {}

    init(json: JSONObject) throws {
        func number(_ key: String) throws -> Double? {
            guard let value = json[key] else { return nil }
            guard let number = value.doubleValue, number >= 0 else {
                throw SalesforceError(
                    status: 400, "INVALID_FIELD", "\(key) must be a non-negative number", fields: [key])
            }
            return number
        }
        latencyMs = Int(try number("latencyMs") ?? 0)
        errorRate = min(1, try number("errorRate") ?? 0)
        failNext = Int(try number("failNext") ?? 0)
        dropConnectionNext = Int(try number("dropConnectionNext") ?? 0)
        dropConnectionRate = min(1, try number("dropConnectionRate") ?? 0)
        dropAfterCommitNext = Int(try number("dropAfterCommitNext") ?? 0)
        dropAfterCommitRate = min(1, try number("dropAfterCommitRate") ?? 0)
        holdAfterCommitMs = Int(try number("holdAfterCommitMs") ?? 0)
        seed = UInt64(try number("seed") ?? 1)
    }

    var json: JSONObject {
        [
            "latencyMs": .int(Int64(latencyMs)), "errorRate": .double(errorRate),
            "failNext": .int(Int64(failNext)),
            "dropConnectionNext": .int(Int64(dropConnectionNext)),
            "dropConnectionRate": .double(dropConnectionRate),
            "dropAfterCommitNext": .int(Int64(dropAfterCommitNext)),
            "dropAfterCommitRate": .double(dropAfterCommitRate),
            "holdAfterCommitMs": .int(Int64(holdAfterCommitMs)),
            "seed": .int(Int64(seed)),
        ]
    }
}

/// What the injector decided for one request.
enum FaultDecision: Sendable, Equatable {
    case none
    case fail
    case dropConnection
    case dropAfterCommit
}

final class FaultInjector: Sendable {
    private let state = Mutex<(settings: FaultSettings, rng: SplitMix64)>(
        (FaultSettings(), SplitMix64(seed: 1)))

    var settings: FaultSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0 = (newValue, SplitMix64(seed: newValue.seed)) } }
    }

    var latencyMs: Int { state.withLock { $0.settings.latencyMs } }

    var holdAfterCommitMs: Int { state.withLock { $0.settings.holdAfterCommitMs } }

    /// Decides the fault for one data request; `isWrite` requests may get `dropAfterCommit`.
    func decide(isWrite: Bool) -> FaultDecision {
        state.withLock { state in
            if state.settings.failNext > 0 {
                state.settings.failNext -= 1
                return .fail
            }
            if state.settings.dropConnectionNext > 0 {
                state.settings.dropConnectionNext -= 1
                return .dropConnection
            }
            if isWrite, state.settings.dropAfterCommitNext > 0 {
                state.settings.dropAfterCommitNext -= 1
                return .dropAfterCommit
            }
            if state.settings.errorRate > 0, state.rng.nextUnit() < state.settings.errorRate { return .fail }
            if state.settings.dropConnectionRate > 0, state.rng.nextUnit() < state.settings.dropConnectionRate
            {
                return .dropConnection
            }
            if isWrite, state.settings.dropAfterCommitRate > 0,
                state.rng.nextUnit() < state.settings.dropAfterCommitRate
            {
                return .dropAfterCommit
            }
            return .none
        }
    }
}
