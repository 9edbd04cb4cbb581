import BatonJSON
import BatonLocking

/// Faults the admin API can switch on, for tests and demos. Counters (`failNext`…) fire on the
/// next N data requests; rates fire at random with a seeded generator, so a run repeats.
public struct FaultSettings: Sendable, Hashable, Codable {
    /// Added before every data response, in milliseconds.
    public var latencyMs = 0
    /// Probability (0–1) of a 503 `SERVER_UNAVAILABLE`.
    public var errorRate = 0.0
    /// The next N data requests get a 503.
    public var failNext = 0
    /// The next N data requests are let through before the counted faults (`failNext`,
    /// `dropConnectionNext`, `dropAfterCommitNext`) start: "fail the second page" without a race.
    public var passNext = 0
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
    /// Every write request is stamped when it starts and commits this many milliseconds later,
    /// while other requests go on: records stamped later can be visible before it (Salesforce
    /// stamps a transaction's records when it starts and shows them when it commits). On the
    /// ideal clock the records are stamped when they commit.
    public var commitDelayMs = 0
    /// Seed of the generator behind the rates.
    public var seed: UInt64 = 1

    public init() {}

    /// Reads the admin API's body: the settings it names over the defaults (other keys are
    /// ignored), each a non-negative number; rates above 1 count as 1.
    init(body: JSONObject) throws {
        var merged = try JSONValue(encoding: FaultSettings()).objectValue ?? [:]
        for (key, value) in body where merged[key] != nil {
            guard let number = value.doubleValue, number >= 0 else {
                throw SalesforceError(
                    status: 400, "INVALID_FIELD", "\(key) must be a non-negative number", fields: [key])
            }
            merged[key] = value
        }
        do {
            self = try JSONValue.object(merged).decode()
        } catch {
            throw SalesforceError(
                status: 400, "INVALID_FIELD", "counts, milliseconds and the seed must be whole numbers")
        }
        errorRate = min(1, errorRate)
        dropConnectionRate = min(1, dropConnectionRate)
        dropAfterCommitRate = min(1, dropAfterCommitRate)
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
    private let state = Locked<(settings: FaultSettings, rng: SplitMix64)>(
        (FaultSettings(), SplitMix64(seed: 1)))

    var settings: FaultSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0 = (newValue, SplitMix64(seed: newValue.seed)) } }
    }

    var latencyMs: Int { state.withLock { $0.settings.latencyMs } }

    var holdAfterCommitMs: Int { state.withLock { $0.settings.holdAfterCommitMs } }

    var commitDelayMs: Int { state.withLock { $0.settings.commitDelayMs } }

    /// Decides the fault for one data request; `isWrite` requests may get `dropAfterCommit`.
    func decide(isWrite: Bool) -> FaultDecision {
        state.withLock { state in
            if state.settings.passNext > 0 {
                state.settings.passNext -= 1
            } else if let counted = Self.takeCounted(&state.settings, isWrite: isWrite) {
                return counted
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

    /// The counted fault due now, if any, counted down.
    private static func takeCounted(_ settings: inout FaultSettings, isWrite: Bool) -> FaultDecision? {
        if settings.failNext > 0 {
            settings.failNext -= 1
            return .fail
        }
        if settings.dropConnectionNext > 0 {
            settings.dropConnectionNext -= 1
            return .dropConnection
        }
        if isWrite, settings.dropAfterCommitNext > 0 {
            settings.dropAfterCommitNext -= 1
            return .dropAfterCommit
        }
        return nil
    }
}
