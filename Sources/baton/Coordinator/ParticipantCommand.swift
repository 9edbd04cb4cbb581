import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonSync
import Foundation

struct ParticipantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "participant",
        abstract:
            "Run one participant (a host or an extension) on a shared directory until Ctrl-C, SIGTERM or SIGHUP.",
        discussion: """
            The participant follows D/lifecycle/NAME: foreground takes the writer lease (highest \
            priority first), restarts stopped syncs and runs the configured ones; background stops \
            them and hands the lease over. Change it with `baton signal` or `echo background > \
            D/lifecycle/NAME`. Events go to D/logs/NAME.jsonl (rotated to NAME.jsonl.1 at --log-limit), \
            state to D/participants/NAME.json.
            The token may also come from the BATON_TOKEN environment variable.
            """
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "This participant's name: 1-64 of A-Z a-z 0-9 . _ -") var name: String
    @Option(help: "host or extension.") var role: ParticipantRole
    @Option(
        help: "Lease priority; higher wins among foreground participants (default: host 100, extension 10).")
    var priority: Int?
    @Option(help: "The REST server's base URL, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "The bearer token (or set BATON_TOKEN).") var token: String?
    @Option(
        name: .customLong("sync-down"),
        help: ArgumentHelp(
            "NAME:SOUP:TARGET — a sync down to run as writer. TARGET is SOQL (it may contain colons), or sosl:FIND …, mru:TYPE:FIELDS, refresh:TYPE:FIELDS (the soup's records again), metadata:TYPE, layout:TYPE[:Compact], or tree:PARENT_TYPE:PARENT_FIELDS:CHILD_TYPE:CHILDREN_RELATIONSHIP:CHILD_SOUP:PARENT_ID_FIELD:CHILD_FIELDS[:lookup|master-detail] (parents in SOUP, children in CHILD_SOUP). FIELDS: comma-separated.",
            valueName: "spec"))
    var syncDowns: [String] = []
    @Option(
        name: .customLong("sync-up"),
        help:
            "NAME:SOUP[:TYPE] — a sync up; TYPE defaults to the sync down's object on that soup, or is a tree:… target as in --sync-down (parents in SOUP sent with their children)."
    )
    var syncUps: [String] = []
    @Option(
        name: .customLong("syncs-config"),
        help: ArgumentHelp(
            "A JSON file of named syncs in Mobile Sync's usersyncs.json format, run as writer after the --sync-down and --sync-up ones (see docs/sync-engine.md).",
            valueName: "file"))
    var syncsConfig: String?
    @Option(name: .customLong("batch-size"), help: "Records per sync down page (1-2000).") var batchSize: Int?
    @Option(
        name: .customLong("clean-ghosts"),
        help: "NAME of a --sync-down to follow with clean resync ghosts each time it runs.")
    var cleanGhosts: [String] = []
    @Flag(
        name: .customLong("incremental-ghosts"),
        help:
            "Clean resync ghosts from the server's deletions since the last clean (sObject Get Deleted) instead of comparing every id. A full comparison still runs at the first clean, once a day, and when the server no longer holds the window; a record deleted in the last minute is left for a later clean."
    )
    var incrementalGhosts = false
    @Option(help: "foreground or background: the state to start in when D/lifecycle/NAME does not exist.")
    var lifecycle: String?
    @Option(
        name: .customLong("down-merge-mode"),
        help:
            "How sync downs treat locally modified records: overwrite (Mobile Sync's default) or leave-if-changed (keep them until they are synced up)."
    )
    var downMergeMode: MergeModeArgument = .overwrite
    @Option(
        name: .customLong("up-merge-mode"),
        help:
            "How sync ups treat records changed on the server since they were fetched: overwrite or leave-if-changed (skip them)."
    )
    var upMergeMode: MergeModeArgument = .overwrite
    @Option(
        name: .customLong("retry-delay"),
        help:
            "Seconds before a failed sync runs again while writer, doubling on each failure in a row (up to 30); 0 never retries."
    )
    var retryDelay: Double = 0.5
    @Option(
        name: .customLong("stop-deadline"),
        help: "Seconds a stop may take before the SQLite statement in flight is interrupted.")
    var stopDeadline: Double = 5
    @Option(
        name: .customLong("save-grace"),
        help:
            "Seconds a stop lets the page being saved run on before it ends the save at the next record: a sync that resumes by id keeps what it saved and its restart fetches the rest of the page. 0 hands the lease over without waiting for a save; by default the page is finished (within --stop-deadline)."
    )
    var saveGrace: Double?
    @Option(
        name: .customLong("lease-term"),
        help:
            "Seconds of the writer lease's term: the writer renews its heartbeat every quarter term, and a writer silent for a whole term (frozen by SIGSTOP or a freezer, or hung) is taken over by a waiting participant."
    )
    var leaseTerm: Double = 2
    @Option(
        name: .customLong("frozen-holder"),
        help: ArgumentHelp(
            "What this participant, waiting for the lease, does about a holder the kernel shows stopped (SIGSTOP) or frozen (cgroup freezer) inside a write transaction once --frozen-bound has passed: wait (name it in the status and log until somebody acts), thaw (SIGCONT, and THAWED for its v1 freezer cgroup: its page commits, then the takeover completes and it is fenced), or kill (SIGKILL: its open page rolls back). Only a process the kernel names as holding D/writer.lock and SQLite's WAL write lock is signalled. A process stopped by a debugger does not resume on SIGCONT.",
            valueName: "wait|thaw|kill"))
    var frozenHolder: FrozenHolderOption = .thaw
    @Option(
        name: .customLong("frozen-bound"),
        help:
            "Seconds a holder holding up a takeover with its write transaction must have been stopped or frozen, counted from its last heartbeat, before --frozen-holder acts (and between two acts)."
    )
    var frozenBound: Double = 2
    @Option(
        name: .customLong("busy-timeout"),
        help:
            "Seconds a write waits for SQLite's lock held by another process (a shell's BEGIN IMMEDIATE, say) before it fails and is retried."
    )
    var busyTimeout: Double = 10
    @Option(
        name: .customLong("concurrent-syncs"),
        help:
            "How many syncs the writer runs at once: their fetches overlap, their page saves go one at a time; syncs sharing a soup, and a sync up with any other, still run one after the other (1: one at a time, as Mobile Sync)."
    )
    var concurrentSyncs = SyncManager.defaultConcurrency
    @Option(
        name: .customLong("log-limit"),
        help: ArgumentHelp(
            "The size at which D/logs/NAME.jsonl rotates to NAME.jsonl.1 (one old file kept): bytes, or with K, M or G (powers of 1024).",
            valueName: "size"))
    var logLimit: String = "8M"
    @Option(
        name: .customLong("storage-fault-file"),
        help: ArgumentHelp(
            "Testing only: while this file exists, store writes fail as its first line says: disk-full (writes that need room fail with SQLITE_FULL), or full, ioerr, interrupt, busy (every write fails so).",
            visibility: .hidden))
    var storageFaultFile: String?

    func validate() throws {
        if let lifecycle, Lifecycle(rawValue: lifecycle) == nil {
            throw ValidationError("--lifecycle must be foreground or background")
        }
        guard token ?? ProcessInfo.processInfo.environment["BATON_TOKEN"] != nil else {
            throw ValidationError("give the server's token with --token or BATON_TOKEN")
        }
        guard ByteCount.parse(logLimit) != nil else {
            throw ValidationError("--log-limit must be a size in bytes, such as 65536, 64K or 8M")
        }
        do { try launch.validate() } catch let error as CLIError { throw ValidationError(error.message) }
    }

    var launch: ParticipantLaunch {
        var specs = SyncSpecs(downs: syncDowns, ups: syncUps)
        specs.cleanGhosts = cleanGhosts
        specs.configFile = syncsConfig
        specs.batchSize = batchSize
        specs.downMergeMode = downMergeMode.mode
        specs.upMergeMode = upMergeMode.mode
        var launch = ParticipantLaunch(
            directory: directory.dir, name: name, role: role, server: server,
            token: token ?? ProcessInfo.processInfo.environment["BATON_TOKEN"] ?? "", specs: specs)
        launch.priority = priority
        launch.initialLifecycle = lifecycle.flatMap(Lifecycle.init(rawValue:))
        launch.retryDelay = retryDelay
        launch.stopDeadline = stopDeadline
        launch.saveGrace = saveGrace
        launch.leaseTerm = leaseTerm
        launch.frozenHolder = frozenHolder.policy
        launch.frozenBound = frozenBound
        launch.busyTimeout = busyTimeout
        launch.concurrentSyncs = concurrentSyncs
        launch.incrementalGhosts = incrementalGhosts
        launch.logLimit = ByteCount.parse(logLimit) ?? ParticipantLog.defaultLimit
        launch.storageFaultFile = storageFaultFile
        return launch
    }

    func run() async throws {
        do {
            try await launch.run(started: CLIOutput.line)
        } catch let error as CLIError {
            throw ValidationError(error.message)
        }
    }
}

/// `overwrite` or `leave-if-changed` on the command line.
extension MergeModeArgument: ExpressibleByArgument {}

extension ParticipantRole: ExpressibleByArgument {}

/// `--frozen-holder`'s values.
enum FrozenHolderOption: String, ExpressibleByArgument, CaseIterable {
    case wait, thaw, kill

    var policy: FrozenHolder.Policy {
        switch self {
        case .wait: .wait
        case .thaw: .thaw
        case .kill: .kill
        }
    }
}
