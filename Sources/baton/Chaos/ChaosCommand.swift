import ArgumentParser
import BatonStore
import Foundation

extension ChaosSabotage: ExpressibleByArgument {}

struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract:
            "Put participants through seeded rounds of crashes, stops, server faults and bad signals; check nothing is lost.",
        discussion: """
            Starts the reference server in this process (file-backed, so it can restart), a \
            temporary shared directory and 2-4 `baton participant` processes. Each round hands \
            the lease to a new writer and injects one fault: SIGKILL of the writer (mid-page, \
            between pages, or after the server committed its sync up), SIGSTOP/SIGCONT, a 5xx, \
            latency, a dropped connection, a response dropped after commit, a server restart, a \
            burst of junk lifecycle signals, server-side edits and deletions during a sync, a \
            stop past its deadline, a full disk, or a writer frozen (SIGSTOP) mid-sync or inside \
            a write transaction while a peer waits to take the lease over. \
            After each round: no participant crashed, lease intervals never overlap, epochs \
            increase, every commit came from the holder of its epoch, integrity_check is ok, no \
            holder that was running was taken over. At \
            the end, with faults off: every sync is done and the store holds exactly the \
            server's records (Ids and LastModifiedDate), with no duplicates from sync up and no \
            local edit lost. The first violation stops the run with a reproduction command; \
            the same seed replays the same faults.
            """
    )

    @Option(help: "The seed of the run's choices (default: a random one, printed).") var seed: UInt64?
    @Option(help: "How many rounds (each injects one fault).") var rounds = 50
    @Option(help: "Participants (2-4; default: chosen by the seed).") var participants: Int?
    @Option(help: "Records seeded on the server.") var records = 300
    @Option(
        help:
            "Keep the run's files here (server data, shared directory, logs) instead of a temporary directory."
    )
    var keep: String?
    @Flag(help: "Print the summary as one JSON object; progress goes to stderr.") var json = false
    @Option(help: .private) var sabotage: ChaosSabotage?

    func validate() throws {
        guard (1...100_000).contains(rounds) else {
            throw ValidationError("--rounds must be between 1 and 100,000")
        }
        if let participants, !(2...4).contains(participants) {
            throw ValidationError("--participants must be between 2 and 4")
        }
        guard (20...100_000).contains(records) else {
            throw ValidationError("--records must be between 20 and 100,000")
        }
        if let keep, let contents = try? FileManager.default.contentsOfDirectory(atPath: keep),
            !contents.isEmpty
        {
            throw ValidationError("--keep \(keep) is not empty; give a new directory so the run starts clean")
        }
    }

    func run() async throws {
        let seed = self.seed ?? UInt64.random(in: 1...999_999)
        let run = try ChaosRun(
            options: .init(
                seed: seed, rounds: rounds, participants: participants, records: records, keep: keep,
                sabotage: sabotage))
        let json = self.json
        run.progress = { line in
            if json {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            } else {
                CLIOutput.line(line)
            }
        }
        let interrupt = ChildProcesses.exitOnInterrupt()
        defer { interrupt.cancel() }
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
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let passed = violations.isEmpty
        var reproduce =
            "baton chaos --seed \(seed) --rounds \(rounds) --records \(records) --participants \(run.members.count)"
        if !passed { reproduce += " --keep DIR" }
        let summary: JSONObject = [
            "passed": .bool(passed), "seed": .int(Int64(seed)), "rounds": .int(Int64(rounds)),
            "participants": .int(Int64(run.members.count)), "records": .int(Int64(records)),
            "faults": .object(
                Dictionary(
                    uniqueKeysWithValues: ChaosFault.allCases.map {
                        ($0.rawValue, JSONValue.int(Int64(run.faults[$0] ?? 0)))
                    })),
            "handOvers": .int(Int64(run.handOvers)), "kills": .int(Int64(run.kills)),
            "interruptedStops": .int(Int64(run.interruptedStops)),
            "takeovers": .int(Int64(run.takeovers)), "falseTakeovers": .int(Int64(run.falseTakeovers)),
            "takeoverMaxMs": run.takeoverMillis.max().map { .double(($0 * 10).rounded() / 10) } ?? .null,
            "frozenInTransactionNamed": .int(Int64(run.blockedDiagnoses)),
            "thawed": .int(Int64(run.thawed)), "missedFreezes": .int(Int64(run.missedFreezes)),
            "localEdits": .int(Int64(run.editCount)), "localCreates": .int(Int64(run.createCount)),
            "violations": .array(
                violations.map { violation in
                    [
                        "round": .int(Int64(violation.round)), "invariant": .string(violation.invariant),
                        "detail": .string(violation.detail),
                    ]
                }),
            "reproduce": .string(reproduce),
            "seconds": .double((seconds * 10).rounded() / 10),
        ]
        if passed { run.removeDirectory() }
        if json {
            CLIOutput.json(.object(summary))
        } else {
            let counts = ChaosFault.allCases.map { "\($0.rawValue) \(run.faults[$0] ?? 0)" }
            CLIOutput.line("faults: " + counts.joined(separator: ", "))
            CLIOutput.line(
                "\(run.handOvers) hand-overs, \(run.kills) writers killed, \(run.interruptedStops) stops past their deadline, \(run.editCount) local edits and \(run.createCount) local creates"
            )
            let slowest = run.takeoverMillis.max().map { String(format: "%.0f ms", $0) } ?? "-"
            CLIOutput.line(
                "\(run.takeovers) takeovers (\(run.falseTakeovers) of a holder that was not frozen; slowest freeze-writer takeover \(slowest)), \(run.blockedDiagnoses) writers named frozen inside a transaction, \(run.thawed) thawed writers stepped down"
            )
            if passed {
                CLIOutput.line(
                    "chaos passed: seed \(seed), \(rounds) rounds, every invariant held (\(String(format: "%.0f", seconds)) s)"
                )
            }
        }
        if let violation = violations.first {
            throw CLIError(
                message:
                    "chaos failed at \(violation.description)\nreproduce: \(reproduce)\nfiles kept in \(run.workPath)"
            )
        }
    }
}
