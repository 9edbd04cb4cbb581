import ArgumentParser
import BatonCoordinator
import BatonHarness

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a condition holds: exit 0 when it does, 2 on timeout, 1 on an error.",
        discussion: """
            States: --writer NAME, --no-writer, --sync NAME=STATUS, --lifecycle NAME=STATE hold \
            when the directory shows them (at once if they already do). Lease events: --epoch N \
            holds once the lease was granted at epoch N or later; --takeover and --release hold \
            on a takeover (a frozen, hung or dead holder replaced) or a clean release of a holding \
            still held when the wait began, or granted after. With --from E they count any \
            holding from epoch E on instead, so a script that reads the epoch (baton status \
            --json) before it acts cannot miss the event by starting the wait too late.

            Re-checks on inotify events in D/participants, D/lifecycle and D/changes (the writer \
            rewrites D/changes after each commit), and for the lease conditions D/writer.lock \
            (rewritten at each grant, release and heartbeat); it never polls. A missing shared \
            directory is an error (exit 1): wait never creates one.

            Exit codes: 0 the condition holds, 2 the timeout passed first, 1 an error (a missing \
            or unsafe directory), 64 bad usage.
            """
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "Wait until participant NAME holds the writer lease.") var writer: String?
    @Flag(name: .customLong("no-writer"), help: "Wait until nobody holds the writer lease.") var noWriter =
        false
    @Option(help: "NAME=STATUS: wait until sync NAME has STATUS.") var sync: String?
    @Option(help: "NAME=STATE: wait until participant NAME is foreground or background (as published).")
    var lifecycle: String?
    @Option(help: "Wait until the lease has been granted at epoch N or later.") var epoch: Int64?
    @Flag(help: "Wait for a takeover of a holder (after the wait began, or see --from).") var takeover = false
    @Flag(help: "Wait for a clean release of the lease (after the wait began, or see --from).") var release =
        false
    @Option(help: "With --takeover or --release: count holdings from epoch E on.") var from: Int64?
    @Option(help: "Give up after this many seconds.") var timeout: Double = 60

    func validate() throws {
        let given = [writer != nil, noWriter, sync != nil, lifecycle != nil, epoch != nil, takeover, release]
            .filter { $0 }.count
        guard given == 1 else {
            throw ValidationError(
                "give exactly one of --writer, --no-writer, --sync, --lifecycle, --epoch, --takeover, --release"
            )
        }
        if let sync, sync.split(separator: "=").count != 2 {
            throw ValidationError("--sync takes NAME=STATUS")
        }
        if let lifecycle {
            let parts = lifecycle.split(separator: "=").map(String.init)
            guard parts.count == 2, Lifecycle(rawValue: parts[1]) != nil else {
                throw ValidationError("--lifecycle takes NAME=foreground|background")
            }
        }
        if let epoch, epoch < 1 { throw ValidationError("--epoch must be 1 or more") }
        if let from {
            guard takeover || release else {
                throw ValidationError("--from goes with --takeover or --release")
            }
            guard from >= 1 else { throw ValidationError("--from must be 1 or more") }
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    /// The one condition given (``validate()`` checked there is exactly one, well formed).
    var condition: WaitCondition {
        if let writer { return .writer(writer) }
        if let sync {
            let parts = sync.split(separator: "=").map(String.init)
            return .sync(name: parts[0], status: parts[1])
        }
        if let lifecycle {
            let parts = lifecycle.split(separator: "=").map(String.init)
            return .lifecycle(name: parts[0], state: Lifecycle(rawValue: parts[1]) ?? .background)
        }
        if let epoch { return .epoch(epoch) }
        if takeover { return .takeover(from: from) }
        if release { return .release(from: from) }
        return .noWriter
    }

    func run() async throws {
        let met = try await condition.wait(in: directory.dir, timeout: .milliseconds(Int(timeout * 1000)))
        guard met else { throw CLIError(message: "timed out after \(timeout)s", exitCode: 2) }
    }
}
