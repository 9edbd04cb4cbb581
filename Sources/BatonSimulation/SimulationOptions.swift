/// What a simulation runs: the seed (it decides every fault and the order of every pending
/// event), how many participants, how many hand-overs before the final settle, whether faults
/// are injected, and a bug to plant.
public struct SimulationOptions: Sendable, Hashable {
    public var seed: UInt64
    /// Participants: a host (priority 100) and extensions (30, 20, ...), 2 to 8.
    public var participants = 3
    /// The run ends, and settles with faults off, after this many new lease epochs.
    public var handOvers = 1_000
    /// Faults from the seed: kills, freezes inside and outside a transaction, thaws, junk
    /// signals, scheduling delays, quiet spells. Off: lifecycle changes only.
    public var faults = true
    /// A bug planted on purpose, to show that the simulation finds it.
    public var mutation: SimulationMutation?
    /// Events kept for the trace a failure prints (the last ones before it).
    public var traceLength = 400

    public init(seed: UInt64) {
        self.seed = seed
    }

    /// The first option out of range, as the command line names it.
    public func validate() throws(SimulationError) {
        guard (2...8).contains(participants) else {
            throw SimulationError("--participants must be between 2 and 8")
        }
        guard (1...100_000_000).contains(handOvers) else {
            throw SimulationError("--hand-overs must be between 1 and 100,000,000")
        }
    }
}

/// A bug from Baton's history, planted again in the simulated participants' surroundings (a
/// patch on what the machines are told or what they ask for, never a switch inside them), so a
/// test can show the simulation finds it.
public enum SimulationMutation: String, Sendable, Hashable, CaseIterable {
    /// Chaos seed 2, round 173: a writer that started while a higher-priority participant had
    /// begun to wait did not look for it again, and the host waited until something else
    /// changed (90 s there). Planted by dropping the priority check that follows the start.
    case startingWriterIgnoresPriority = "starting-writer-ignores-priority"
    /// A waiter that takes the lease over from a holder running and beating: planted by hiding
    /// the beats from the waiter's look at the lock file (it reads the record without them), so
    /// the takeover rule counts a full term of silence that was not.
    case takeoverOfRunningHolder = "takeover-of-running-holder"
    /// A writer whose first write does not check its epoch against the store's: the fence,
    /// planted by letting a stale holding start and commit.
    case unfencedStart = "unfenced-start"
    /// Chaos seed 3 with busy loops: a holding whose store epoch moved before its first write
    /// (a takeover while it was frozen between its lock and its start) retried its start
    /// forever, holding on, instead of stepping down fenced. Planted by reporting the dead
    /// fence as an ordinary start failure.
    case deadFenceRetried = "dead-fence-retried"
    /// Found by the duplicate-name test under load: a SIGTERM right after the start was lost
    /// (the handler was armed after the signal was ignored), and the participant ran on.
    /// Planted by dropping a SIGTERM that lands in the first 5 ms of a process.
    case sigtermDroppedAtStart = "sigterm-dropped-at-start"
    /// Chaos seed 7177 (and Mobile Sync 7.1's way): the next run's start taken from the
    /// records saved (their newest stamp) instead of the server's clock read before the query,
    /// less the overlap, so a transaction stamped earlier and committed later is never asked
    /// for. Planted in the completed position.
    case resumeMarkFromRecords = "resume-mark-from-records"
    /// Chaos seed 9173: with `writer.lock` deleted, a take that waited for the old holder's
    /// release to commit was dated before it, and the history showed two holders at once.
    /// Planted by dating the take when the holding began instead of inside its transaction.
    case takeDatedBeforeWait = "take-dated-before-wait"
    /// A failed sync's report lost on its way to the participant: nothing retries it, and the
    /// status shows nothing. Planted by not feeding `syncFailed` to the machine.
    case syncFailureUnheard = "sync-failure-unheard"
}

/// A usage error.
public struct SimulationError: Error, CustomStringConvertible, Sendable {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// An invariant that did not hold, when (simulated milliseconds, step), and the events before it.
public struct SimulationViolation: Sendable, Hashable, CustomStringConvertible {
    public var invariant: String
    public var detail: String
    public var step: Int
    public var atMillis: Double

    public var description: String {
        "step \(step) (\(String(format: "%.1f", atMillis)) ms simulated): \(invariant): \(detail)"
    }
}

/// What a simulation came to.
public struct SimulationOutcome: Sendable {
    public var options: SimulationOptions
    /// Events carried out.
    public var steps: Int
    /// New lease epochs: hand-overs and takeovers.
    public var handOvers: Int
    public var takeovers: Int
    public var kills: Int
    public var freezes: Int
    public var freezesInTransaction: Int
    public var commits: Int
    public var fencedCommits: Int
    /// Holdings whose first write found the store's epoch past theirs (they step down fenced).
    public var staleStarts: Int
    /// Sync runs that failed (a full disk, a 503, a fence), each to be retried.
    public var syncFailures: Int
    public var simulatedSeconds: Double
    public var violation: SimulationViolation?
    /// The last events before the violation (empty when none).
    public var trace: [String]

    public var passed: Bool { violation == nil }

    /// How to run it again. A run that failed before its settle is cut to the hand-over it
    /// failed in: the same events happen up to the violation, and no more.
    public var reproduce: String {
        let handOvers =
            violation != nil && self.handOvers < options.handOvers ? self.handOvers + 1 : options.handOvers
        var command =
            "baton simulate --seed \(options.seed) --participants \(options.participants) --hand-overs \(handOvers)"
        if !options.faults { command += " --no-faults" }
        if let mutation = options.mutation { command += " --mutation \(mutation.rawValue)" }
        return command
    }
}
