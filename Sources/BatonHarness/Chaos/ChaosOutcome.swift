import BatonCoordinator
import BatonStore
import BatonSync
import Foundation

/// What a whole chaos run ended with: the summary (JSON and lines), and the failure to report.
public struct ChaosOutcome: Sendable {
    public var passed: Bool
    /// The summary `baton chaos --json` prints.
    public var summary: JSONObject
    /// The summary as text lines.
    public var lines: [String]
    /// The first violation, with how to reproduce it and where the files were kept.
    public var failure: String?
}

extension ChaosRun {
    /// Plays a whole run (`progress` hears each round), shuts everything down, removes the files
    /// of a run that passed, and sums it up.
    public static func execute(_ options: Options, progress: @escaping (String) -> Void) async throws
        -> ChaosOutcome
    {
        let run = try ChaosRun(options: options)
        run.progress = progress
        let started = ContinuousClock.now
        var violations: [ChaosViolation] = []
        do {
            try await run.play()
        } catch let violation as ChaosViolation {
            violations.append(violation)
        } catch {
            violations.append(ChaosViolation(round: 0, invariant: "the run could finish", detail: "\(error)"))
        }
        await run.shutdown()
        let seconds = BenchStats.seconds(ContinuousClock.now - started)
        // The summary reads the participants' logs: before their files go.
        let outcome = run.outcome(violations: violations, seconds: seconds)
        if violations.isEmpty { run.removeDirectory() }
        return outcome
    }

    /// The most syncs one participant had running at once, from its log. A submitted sync
    /// reports `running` with no size while it waits in the queue (Mobile Sync's contract); it
    /// runs from its first `running` with a size (what its run persists first) to its next
    /// status. Nothing runs across a new lease term (a killed writer's last syncs have no end
    /// in the log).
    static func syncsAtOnce(_ events: [JSONObject]) -> Int {
        var running: Set<Int64> = []
        var most = 0
        for event in events {
            switch event.event {
            case "lease.acquired", "lease.takeover":
                running = []
            case "sync":
                guard let id = event["id"]?.intValue else { continue }
                if event["status"]?.stringValue == SyncStatus.running.rawValue {
                    guard (event["totalSize"]?.intValue ?? -1) >= 0 else { continue }
                    running.insert(id)
                    most = max(most, running.count)
                } else {
                    running.remove(id)
                }
            default:
                continue
            }
        }
        return most
    }

    func outcome(violations: [ChaosViolation], seconds: Double) -> ChaosOutcome {
        let passed = violations.isEmpty
        // What a peer should need at most to write past a writer frozen inside a transaction:
        // the participants' frozen-holder bound (their default) plus one lease term.
        let policyBound = FrozenHolder.standard.bound + Self.leaseTerm
        var reproduce =
            "baton chaos --seed \(options.seed) --rounds \(options.rounds) --records \(options.records) --participants \(members.count) --frozen-holder \(options.frozenHolder.rawValue) --freezer \(options.freezer.rawValue) --concurrent-syncs \(options.concurrentSyncs)"
        if !passed { reproduce += " --keep DIR" }
        func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
        let faultCounts = JSONObject(
            uniqueKeysWithValues: ChaosFault.allCases.map { ($0.rawValue, int(faults[$0] ?? 0)) })
        let violationList: [JSONValue] = violations.map { violation in
            [
                "round": int(violation.round), "invariant": .string(violation.invariant),
                "detail": .string(violation.detail),
            ]
        }
        var summary: JSONObject = [
            "passed": .bool(passed), "seed": .int(Int64(options.seed)), "rounds": int(options.rounds),
            "participants": int(members.count), "records": int(options.records),
            "faults": .object(faultCounts), "handOvers": int(handOvers), "kills": int(kills),
            "interruptedStops": int(interruptedStops), "takeovers": int(takeovers),
            "falseTakeovers": int(falseTakeovers),
        ]
        summary["takeoverMaxMs"] = takeoverMillis.max().map { .double(BenchStats.round($0)) } ?? .null
        summary["frozenInTransactionNamed"] = int(blockedDiagnoses)
        summary["thawed"] = int(thawed)
        summary["frozenHolderActs"] = int(policyActs)
        summary["frozenInTransactionMaxMs"] =
            frozenInTransactionMillis.max().map { .double(BenchStats.round($0)) } ?? .null
        summary["frozenInTransactionBoundMs"] = .double(policyBound.inMilliseconds)
        summary["missedFreezes"] = int(missedFreezes)
        summary["localEdits"] = int(editCount)
        summary["localCreates"] = int(createCount)
        summary["lateCommits"] = int(lateCommits)
        summary["concurrentSyncs"] = int(options.concurrentSyncs)
        let atOnce = members.map { Self.syncsAtOnce($0.log.events()) }.max() ?? 0
        summary["syncsAtOnceMax"] = int(atOnce)
        summary["violations"] = .array(violationList)
        summary["reproduce"] = .string(reproduce)
        summary["seconds"] = .double(BenchStats.round(seconds))

        let counts = ChaosFault.allCases.map { "\($0.rawValue) \(faults[$0] ?? 0)" }
        let slowest = takeoverMillis.max().map { String(format: "%.0f ms", $0) } ?? "-"
        var lines = [
            "faults: " + counts.joined(separator: ", "),
            "\(handOvers) hand-overs, \(kills) writers killed, \(interruptedStops) stops past their deadline, \(editCount) local edits and \(createCount) local creates, \(lateCommits) server transactions committed late",
            "\(takeovers) takeovers (\(falseTakeovers) of a holder that was not frozen; slowest freeze-writer takeover \(slowest)), \(blockedDiagnoses) writers named frozen inside a transaction, \(thawed) thawed writers stepped down",
            "syncs at once: up to \(options.concurrentSyncs) allowed, at most \(atOnce) seen running together in one participant's log",
        ]
        if let longest = frozenInTransactionMillis.max() {
            lines.append(
                "frozen inside a transaction: a peer held the lease \(String(format: "%.0f", longest)) ms after the freeze at the slowest of \(frozenInTransactionMillis.count) (policy bound plus lease term \(String(format: "%.0f", policyBound.inMilliseconds)) ms)"
            )
        }
        if passed {
            lines.append(
                "chaos passed: seed \(options.seed), \(options.rounds) rounds, every invariant held (\(String(format: "%.0f", seconds)) s)"
            )
        }
        let failure = violations.first.map {
            "chaos failed at \($0.description)\nreproduce: \(reproduce)\nfiles kept in \(workPath)"
        }
        return ChaosOutcome(passed: passed, summary: summary, lines: lines, failure: failure)
    }
}
