import Testing

@testable import BatonSimulation

/// The simulation runs the participants' real machines against simulated surroundings: a short
/// run with faults passes every invariant, the same seed replays the same run, and each planted
/// bug is found from a fixed range of seeds.
@Suite("Deterministic simulation")
struct SimulationTests {
    func options(seed: UInt64, handOvers: Int = 300, mutation: SimulationMutation? = nil) -> SimulationOptions
    {
        var options = SimulationOptions(seed: seed)
        options.handOvers = handOvers
        options.mutation = mutation
        return options
    }

    @Test("runs with faults hold every invariant and settle: the host writes and its syncs finish")
    func passes() {
        for seed in UInt64(1)...8 {
            let outcome = Simulation.run(options(seed: seed))
            #expect(
                outcome.passed,
                "seed \(seed): \(outcome.violation?.description ?? "")\n\(outcome.trace.suffix(40).joined(separator: "\n"))"
            )
            #expect(outcome.handOvers >= 300)
            #expect(outcome.commits > 0)
        }
    }

    @Test("the faults happen: kills, freezes inside a transaction, takeovers, fenced commits")
    func faultsHappen() {
        var total = (kills: 0, inTransaction: 0, takeovers: 0)
        for seed in UInt64(1)...8 {
            let outcome = Simulation.run(options(seed: seed))
            total.kills += outcome.kills
            total.inTransaction += outcome.freezesInTransaction
            total.takeovers += outcome.takeovers
        }
        #expect(total.kills > 0)
        #expect(total.inTransaction > 0)
        #expect(total.takeovers > 0)
    }

    @Test("the same seed replays the same run, event for event")
    func replays() {
        let first = Simulation.run(options(seed: 42))
        let second = Simulation.run(options(seed: 42))
        #expect(first.steps == second.steps)
        #expect(first.handOvers == second.handOvers && first.takeovers == second.takeovers)
        #expect(first.commits == second.commits && first.simulatedSeconds == second.simulatedSeconds)
        let other = Simulation.run(options(seed: 43))
        #expect(other.steps != first.steps)
    }

    @Test("each planted bug is found within a fixed range of seeds", arguments: SimulationMutation.allCases)
    func findsPlantedBug(mutation: SimulationMutation) {
        let found = (UInt64(1)...20).lazy.compactMap { seed -> SimulationViolation? in
            Simulation.run(self.options(seed: seed, handOvers: 2_000, mutation: mutation)).violation
        }.first
        #expect(found != nil, "\(mutation) was not found in seeds 1-20")
    }

    @Test(
        "a failure names its invariant, keeps the events before it, and its cut reproduction fails the same way"
    )
    func failureReplays() throws {
        let failed = Simulation.run(options(seed: 2, handOvers: 2_000, mutation: .unfencedStart))
        let violation = try #require(failed.violation)
        // A start past a dead fence: two writers of one epoch, or a commit under a stale one.
        #expect(["one writer per epoch", "no commit under a stale epoch"].contains(violation.invariant))
        #expect(!failed.trace.isEmpty && failed.trace.count <= 400)
        #expect(failed.reproduce.contains("--hand-overs \(failed.handOvers + 1)"))
        // The run cut to the hand-over it failed in fails at the same step, the same way.
        let again = Simulation.run(
            options(seed: 2, handOvers: failed.handOvers + 1, mutation: .unfencedStart))
        #expect(again.violation == violation)
    }
}
