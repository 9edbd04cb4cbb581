import ArgumentParser
import BatonHarness
import BatonSimulation
import BatonStore
import Foundation

extension SimulationMutation: ExpressibleByArgument {}

struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract:
            "Run many participants' real state machines in one process against a simulated kernel lock, directory, store and clock; check the chaos invariants after every step.",
        discussion: """
            Deterministic: the seed decides every fault and the order of every pending event, so \
            the same seed (on the same commit) replays a run event for event. Faults: kills, \
            SIGSTOP and cgroup-style freezes inside and outside a write transaction, thaws, junk \
            and missing lifecycle signals, scheduling delays, quiet spells. After every step: one \
            writer per epoch, epochs increase, no commit under a stale epoch, every commit from \
            its epoch's holder, no running holder taken over, and a higher-priority foreground \
            waiter gets the lease from a running lower-priority writer within 12 s when nothing \
            is killed or frozen meanwhile. At the end, with faults off, the host must write and \
            finish its syncs within 60 simulated seconds. A failure prints the invariant, the \
            last events before it and the command that replays it (--hand-overs cut to where it \
            failed: the shortest run that reproduces it). docs/hardening.md says what is modelled \
            and what is not.
            """
    )

    @Option(help: "The seed (default: a random one, printed).") var seed: UInt64?
    @Option(help: "Participants (2-8): a host and extensions of lower priorities.") var participants = 3
    @Option(
        name: .customLong("hand-overs"),
        help: "New lease epochs (hand-overs and takeovers) before the final settle.")
    var handOvers = 100_000
    @Flag(name: .customLong("no-faults"), help: "Lifecycle changes only: no kills, freezes or junk signals.")
    var noFaults = false
    @Option(
        help: ArgumentHelp(
            "Plant a bug from Baton's history, to see the simulation find it: \(SimulationMutation.allCases.map(\.rawValue).joined(separator: ", ")).",
            valueName: "name"))
    var mutation: SimulationMutation?
    @Option(help: "Events of the trace printed on a failure.") var trace = 60
    @Flag(help: "Print the summary as one JSON object.") var json = false

    var options: SimulationOptions {
        var options = SimulationOptions(seed: seed ?? UInt64.random(in: 1...999_999))
        options.participants = participants
        options.handOvers = handOvers
        options.faults = !noFaults
        options.mutation = mutation
        options.traceLength = max(trace, 1)
        return options
    }

    func validate() throws {
        do { try options.validate() } catch { throw ValidationError(error.description) }
    }

    func run() throws {
        let options = self.options
        if !json {
            CLIOutput.line(
                "simulate: seed \(options.seed), \(options.participants) participants, \(options.handOvers) hand-overs\(options.faults ? " with faults" : "")\(options.mutation.map { ", planted bug \($0.rawValue)" } ?? "")"
            )
        }
        let clock = ContinuousClock()
        let started = clock.now
        let outcome = Simulation.run(options)
        let seconds =
            Double((clock.now - started).components.attoseconds) / 1e18
            + Double((clock.now - started).components.seconds)
        let perMinute = seconds > 0 ? Double(outcome.handOvers) / seconds * 60 : 0
        if json {
            var summary: JSONObject = [
                "passed": .bool(outcome.passed), "seed": .int(Int64(options.seed)),
                "participants": .int(Int64(options.participants)), "steps": .int(Int64(outcome.steps)),
                "handOvers": .int(Int64(outcome.handOvers)), "takeovers": .int(Int64(outcome.takeovers)),
                "kills": .int(Int64(outcome.kills)), "freezes": .int(Int64(outcome.freezes)),
                "freezesInTransaction": .int(Int64(outcome.freezesInTransaction)),
                "commits": .int(Int64(outcome.commits)), "fencedCommits": .int(Int64(outcome.fencedCommits)),
                "staleStarts": .int(Int64(outcome.staleStarts)),
                "syncFailures": .int(Int64(outcome.syncFailures)),
                "simulatedSeconds": .double((outcome.simulatedSeconds * 10).rounded() / 10),
                "seconds": .double((seconds * 1000).rounded() / 1000),
                "handOversPerMinute": .double(perMinute.rounded()),
                "reproduce": .string(outcome.reproduce),
            ]
            if let violation = outcome.violation {
                summary["violation"] = [
                    "invariant": .string(violation.invariant), "detail": .string(violation.detail),
                    "step": .int(Int64(violation.step)), "atMillis": .double(violation.atMillis),
                ]
                summary["trace"] = .array(outcome.trace.map(JSONValue.string))
            }
            CLIOutput.json(.object(summary))
        } else {
            CLIOutput.line(
                "\(outcome.steps) steps, \(outcome.handOvers) hand-overs (\(outcome.takeovers) takeovers), \(outcome.kills) kills, \(outcome.freezes) freezes (\(outcome.freezesInTransaction) inside a transaction), \(outcome.commits) commits (\(outcome.fencedCommits) refused by the fence), \(outcome.staleStarts) stale starts, \(String(format: "%.0f", outcome.simulatedSeconds)) simulated seconds"
            )
            CLIOutput.line(
                "\(String(format: "%.2f", seconds)) s on one core: \(String(format: "%.0f", perMinute)) hand-overs a minute"
            )
            if let violation = outcome.violation {
                for line in outcome.trace { CLIOutput.line("  " + line) }
                CLIOutput.line("violation at \(violation.description)")
            } else {
                CLIOutput.line("simulate passed: seed \(options.seed), every invariant held")
            }
        }
        if let violation = outcome.violation {
            throw CLIError(
                message: "simulate failed: \(violation.invariant)\nreproduce: \(outcome.reproduce)")
        }
    }
}
