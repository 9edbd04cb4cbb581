import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore
import BatonSync
import Foundation

extension ChaosSabotage: ExpressibleByArgument {}
extension ChaosFreezer: ExpressibleByArgument {}

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
    @Option(
        name: .customLong("frozen-holder"),
        help: ArgumentHelp(
            "The participants' --frozen-holder policy: wait (the run resumes a writer frozen inside a transaction once a peer named it), thaw (the peer resumes it) or kill (the peer kills it; the run starts it again).",
            valueName: "wait|thaw|kill"))
    var frozenHolder: FrozenHolderOption = .thaw
    @Option(
        help: ArgumentHelp(
            "How a writer is frozen inside a write transaction: sigstop, or cgroup (the v1 cgroup freezer at /sys/fs/cgroup/freezer, which this user must be able to write).",
            valueName: "sigstop|cgroup"))
    var freezer: ChaosFreezer = .sigstop
    @Option(
        name: .customLong("concurrent-syncs"),
        help:
            "How many syncs each participant runs at once (its --concurrent-syncs; 1 runs them one at a time, as Mobile Sync). The participants' syncs `accounts` and `trees` share no soup, so they overlap; the sync up `edits` runs alone."
    )
    var concurrentSyncs = SyncManager.defaultConcurrency
    @Option(help: .private) var sabotage: ChaosSabotage?

    func validate() throws {
        do { try options.validate() } catch let error as CLIError { throw ValidationError(error.message) }
    }

    var options: ChaosRun.Options {
        var options = ChaosRun.Options(
            seed: seed ?? UInt64.random(in: 1...999_999), baton: ChildProcesses.executablePath)
        options.rounds = rounds
        options.participants = participants
        options.records = records
        options.keep = keep
        options.sabotage = sabotage
        options.frozenHolder = frozenHolder.policy
        options.freezer = freezer
        options.concurrentSyncs = concurrentSyncs
        return options
    }

    func run() async throws {
        let options = self.options
        let interrupt = ChildProcesses.exitOnInterrupt()
        defer { interrupt.cancel() }
        let json = self.json
        let outcome = try await ChaosRun.execute(options) { line in
            // With --json, stdout carries only the summary.
            if json { CLIOutput.stderrLine(line) } else { CLIOutput.line(line) }
        }
        if json {
            CLIOutput.json(.object(outcome.summary))
        } else {
            for line in outcome.lines { CLIOutput.line(line) }
        }
        if let failure = outcome.failure { throw CLIError(message: failure) }
    }
}
