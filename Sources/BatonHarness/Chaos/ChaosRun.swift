import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import BatonSync
import Foundation
import Logging

/// One chaos run: a reference server (file-backed, so it can restart), a temporary shared
/// directory and 2–4 participant processes, put through one seeded fault per round. After each
/// round it checks the invariants; at the end it settles everything and compares the store with
/// the server. Driven from one task (the chaos command); not shared across tasks.
public final class ChaosRun: @unchecked Sendable {
    /// One participant process (restarted under the same name after a SIGKILL).
    final class Member: @unchecked Sendable {
        let name: String
        let role: String
        let priority: Int
        let log: LogTail
        var process: ChildProcess?
        var lifecycle: Lifecycle = .background
        /// Its stop deadline (seconds); a fault may change it, and it is kept across restarts.
        var stopDeadline = "2"
        /// Its save grace (seconds), nil to finish the page being saved when it stops.
        let saveGrace: String?

        init(name: String, role: String, priority: Int, saveGrace: String? = nil, logsPath: String) {
            self.name = name
            self.role = role
            self.priority = priority
            self.saveGrace = saveGrace
            log = LogTail(path: logsPath + "/\(name).jsonl")
        }

        var pid: Int32 { process?.pid ?? 0 }
    }

    /// What to run: the seed, the rounds, the participants (2-4, or chosen by the seed), the
    /// records seeded, where to keep the files, a deliberate bug to plant, and the `baton`
    /// executable the participants run.
    public struct Options: Sendable {
        public var seed: UInt64
        public var rounds = 50
        public var participants: Int?
        public var records = 300
        public var keep: String?
        public var sabotage: ChaosSabotage?
        public var baton: String
        /// What the participants do about a writer frozen inside a transaction.
        public var frozenHolder: FrozenHolder.Policy = FrozenHolder.standard.policy
        /// How a writer is frozen inside a transaction: SIGSTOP, or the v1 cgroup freezer.
        public var freezer: ChaosFreezer = .sigstop
        /// How many syncs each participant runs at once (`--concurrent-syncs`).
        public var concurrentSyncs = SyncManager.defaultConcurrency

        public init(seed: UInt64, baton: String) {
            self.seed = seed
            self.baton = baton
        }

        /// The first option out of range, named as the command line names it.
        public func validate() throws {
            guard (1...100_000).contains(rounds) else {
                throw CLIError(message: "--rounds must be between 1 and 100,000")
            }
            if freezer == .cgroup, !ChaosFreezer.isAvailable {
                throw CLIError(
                    message:
                        "--freezer cgroup needs the v1 cgroup freezer at \(ChaosFreezer.mount), writable by this user"
                )
            }
            guard (1...64).contains(concurrentSyncs) else {
                throw CLIError(message: "--concurrent-syncs must be between 1 and 64")
            }
            if let participants, !(2...4).contains(participants) {
                throw CLIError(message: "--participants must be between 2 and 4")
            }
            guard (20...100_000).contains(records) else {
                throw CLIError(message: "--records must be between 20 and 100,000")
            }
            if let keep, let contents = try? FileManager.default.contentsOfDirectory(atPath: keep),
                !contents.isEmpty
            {
                throw CLIError(
                    message: "--keep \(keep) is not empty; give a new directory so the run starts clean")
            }
        }
    }

    static let syncNames = ["accounts", "edits", "trees"]
    /// The sync downs, each followed by clean resync ghosts.
    static let downSyncNames = ["accounts", "trees"]
    /// Accounts that get contacts, and how many each, for the parent-children sync `trees`.
    static let treeAccounts = 40
    static let contactsPerAccount = 2
    /// `trees`: Accounts with their Contacts, into soups of their own (Mobile Sync's
    /// parent-children sync down, in its syncs-config format); then the sync up `edits` of the
    /// accounts, so that `accounts` and `trees`, which share no soup, run at once, and `edits`
    /// (a sync up runs alone) after them.
    static let treesConfig = #"""
        {"syncs": [{"syncName": "trees", "syncType": "syncDown", "soupName": "treeAccounts",
          "target": {"type": "parentChildren", "batchSize": 10,
            "parent": {"sobjectType": "Account", "soupName": "treeAccounts"},
            "children": {"sobjectType": "Contact", "sobjectTypePlural": "Contacts", "soupName": "treeContacts",
                         "parentIdFieldName": "AccountId"},
            "parentFieldlist": ["Id", "Name"], "childrenFieldlist": ["LastName", "AccountId"],
            "relationshipType": "MASTER_DETAIL"}},
          {"syncName": "edits", "syncType": "syncUp", "soupName": "accounts",
           "target": {"type": "rest", "objectType": "Account"}, "options": {"mergeMode": "OVERWRITE"}}]}
        """#
    /// The accounts' fields the sync down `accounts` selects (the end check compares them).
    static let syncedFields = ["Name", "Number__c", "Rating__c"]
    static let query = "SELECT Id, \(syncedFields.joined(separator: ", ")) FROM Account"
    static let batchSize = 10
    static let settleTimeout = Duration.seconds(90)

    let options: Options
    var random: SplitMix64
    let workPath: String
    let shared: SharedDirectory
    let token = ReferenceServer.generateToken()
    let quiet: Logger
    var server: RunningServer?
    var port = 0
    var members: [Member] = []
    var store: SharedStore?
    var faults: [ChaosFault: Int] = [:]
    var handOvers = 0
    var kills = 0
    /// `stop-deadline-interrupt` rounds whose stop did pass its deadline (the save abandoned).
    var interruptedStops = 0
    /// A writer frozen by a `freeze-writer` round, until it is thawed.
    var frozen: Frozen?
    /// A server transaction a `server-transaction-in-flight` round left open across the next
    /// round's hand-over.
    var inFlight: HeldTransaction?
    /// Server transactions committed after records stamped later were visible.
    var lateCommits = 0
    var takeovers = 0
    var falseTakeovers = 0
    var takeoverMillis: [Double] = []
    var blockedDiagnoses = 0
    /// Under `thaw` and `kill`: from a writer seen frozen inside a transaction to a peer's lease.
    var frozenInTransactionMillis: [Double] = []
    /// Writers frozen inside a transaction that a peer resumed (thaw) or killed (kill) itself.
    var policyActs = 0
    var thawed = 0
    var missedFreezes = 0
    var takeoversScanned: [String: Int] = [:]
    /// Every local edit and create the run made, in order (see ``checkNoEditLost``).
    var edits: [LocalEdit] = []
    var editCount = 0
    var createCount = 0
    var progress: (String) -> Void = { _ in }

    init(options: Options) throws {
        self.options = options
        random = SplitMix64(seed: options.seed)
        if let keep = options.keep {
            workPath = keep
        } else {
            workPath =
                FileManager.default.temporaryDirectory.path + "/baton-chaos-" + UUID().uuidString.prefix(8)
            ChildProcesses.shared.removeOnInterrupt(workPath)
        }
        shared = try SharedDirectory(path: workPath + "/shared")
        var quiet = Logger(label: "baton.chaos")
        quiet.logLevel = .critical
        self.quiet = quiet
    }

    var client: RESTClient { RESTClient(baseURL: server?.url ?? "", token: token, logger: quiet) }

    /// While this file exists, the participants' store writes fail as it says (`disk-full`).
    var diskFullPath: String { workPath + "/disk-full" }

    /// The syncs config holding `trees`.
    var treesConfigPath: String { workPath + "/syncs.json" }

    // MARK: - The run

    /// Plays every round and the final settle; throws the first violation.
    func play() async throws {
        for sub in [shared.lifecyclePath, shared.participantsPath, shared.logsPath] {
            try shared.ensureSubdirectory(sub)
        }
        try await startServer()
        // Accounts the org has had for a while (the newest an hour old): a run's overlap then
        // reaches only what the rounds change.
        let accountIds = try await client.adminSeed(
            type: "Account", count: options.records, timeStamps: max(1, options.records / 3), bytes: 100,
            ageSeconds: 3600)
        let contacts: [JSONObject] = accountIds.prefix(Self.treeAccounts).flatMap { id in
            (0..<Self.contactsPerAccount).map { n in
                ["LastName": .string("chaos contact \(n)"), "AccountId": .string(id)]
            }
        }
        for start in stride(from: 0, to: contacts.count, by: 200) {
            _ = try await client.compositeCreate(
                type: "Contact", records: Array(contacts[start..<min(contacts.count, start + 200)]),
                allOrNone: true)
        }
        try Self.treesConfig.write(toFile: treesConfigPath, atomically: true, encoding: .utf8)
        try await client.adminSetFaults(["latencyMs": 5])

        let count = options.participants ?? random.int(2...4)
        let priorities = [30, 20, 10]
        members = [Member(name: "host", role: "host", priority: 100, logsPath: shared.logsPath)]
        for index in 1..<count {
            members.append(
                Member(
                    name: "ext\(index)", role: "extension", priority: priorities[index - 1],
                    // The first extension stops as one short of time would: a page it is
                    // saving ends at once, keeping what it saved.
                    saveGrace: index == 1 ? "0" : nil, logsPath: shared.logsPath))
        }
        for member in members { try await start(member) }
        store = try SharedStore.open(directory: shared, logger: quiet)
        progress(
            "chaos: seed \(options.seed), \(options.rounds) rounds, \(members.count) participants, \(options.records) records, directory \(workPath)"
        )

        try arrange(foreground: [members[0]])
        try await settle(round: 0, "the host's first sync")
        try check(round: 0)

        var bag = FaultBag()
        for round in 1...max(1, options.rounds) {
            let fault = bag.next(using: &random)
            let started = ContinuousClock.now
            try await thawIfDue(
                round: round, force: fault == .freezeWriter || fault == .freezeWriterInTransaction)
            try await play(round: round, fault: fault)
            try await recover()
            try await settle(round: round, "the round to settle after \(fault.rawValue)")
            if round == 1 { try await sabotageAfterFirstRound() }
            try check(round: round)
            let seconds = (ContinuousClock.now - started).inSeconds
            let writer = expectedWriter?.name ?? "nobody"
            progress(
                "round \(round)/\(options.rounds) \(fault.rawValue): \(writer) writes, invariants hold (\(String(format: "%.1f", seconds)) s)"
            )
        }
        try await finalSettle(round: options.rounds)
        if options.sabotage == .serverDrift {
            try await client.adminTouch(type: "Account", count: 1, fields: ["Rating__c": "drift"])
        }
        try await checkConverged(round: options.rounds)
    }

    /// Stops every participant (SIGTERM, they release) and the server.
    func shutdown() async {
        for member in members { await member.process?.terminate() }
        try? store?.close()
        await server?.stop()
        server = nil
    }

    func removeDirectory() {
        if options.keep == nil { try? FileManager.default.removeItem(atPath: workPath) }
    }

    // MARK: - Server

    func startServer() async throws {
        let configuration = ReferenceServer.Configuration(
            port: port, token: token, dataPath: workPath + "/server.sqlite")
        let running = try await ReferenceServer.start(configuration, logger: quiet)
        server = running
        port = Int(running.url.split(separator: ":").last ?? "") ?? 0
    }

    func restartServer(downFor pause: Duration) async throws {
        await server?.stop()
        server = nil
        try await Task.sleep(for: pause)  // the outage itself
        try await startServer()
    }

    // MARK: - Participants

    func start(_ member: Member) async throws {
        let outputPath = shared.logsPath + "/\(member.name).out"
        member.process = try await ChildProcess.start(
            options.baton,
            [
                "participant", "--dir", shared.path, "--name", member.name, "--role", member.role,
                "--priority", String(member.priority), "--server", "http://127.0.0.1:\(port)",
                "--lifecycle", "background", "--batch-size", String(Self.batchSize),
                "--sync-down", "accounts:accounts:\(Self.query)", "--clean-ghosts", "accounts",
                "--syncs-config", treesConfigPath, "--clean-ghosts", "trees",
                "--down-merge-mode", "leave-if-changed", "--retry-delay", "0.2", "--stop-deadline",
                member.stopDeadline,
                "--storage-fault-file", diskFullPath, "--frozen-holder", options.frozenHolder.rawValue,
                "--concurrent-syncs", String(options.concurrentSyncs),
            ] + (member.saveGrace.map { ["--save-grace", $0] } ?? []), environment: ["BATON_TOKEN": token],
            stdout: .file(outputPath), stderr: .file(outputPath))
    }

    /// Writes each member's lifecycle: foreground for `foreground`, background for the rest.
    func arrange(foreground: [Member]) throws {
        // A frozen member is always asked to the background (it reads that once thawed).
        let names = Set(foreground.filter { $0 !== frozen?.member }.map(\.name))
        for member in members {
            member.lifecycle = names.contains(member.name) ? .foreground : .background
            try LifecycleSignal.write(member.lifecycle, directory: shared, name: member.name)
        }
    }

    /// The member that must end up writing: the highest-priority foreground one.
    var expectedWriter: Member? {
        members.filter { $0.lifecycle == .foreground }.max { $0.priority < $1.priority }
    }

    /// The member that writes now, by the published states.
    var currentWriter: Member? {
        // A frozen member still says writer; it is not one.
        let writer = ParticipantStatus.readAll(in: shared).first {
            $0.isWriter && $0.isAlive && $0.name != frozen?.member.name
        }
        return members.first { $0.name == writer?.name && $0.pid == writer?.pid }
    }

    // MARK: - Waiting (on inotify events in the shared directory)

    /// Waits until `condition` holds; a timeout is a liveness violation.
    func until(
        round: Int, _ what: String, timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable () -> Bool
    ) async throws {
        let met = try await DirectoryWatcher(
            root: shared.path, subdirectories: ["participants", "lifecycle", "logs"],
            reportsModifications: true
        ).wait(timeout: timeout, until: condition)
        if !met {
            throw ChaosViolation(
                round: round, invariant: "liveness",
                detail: "\(what) did not happen within \(timeout); \(diagnosis())")
        }
    }

    /// Whether `member` holds the lease (its current process) and, since it took it, ran each
    /// configured sync to `done` with clean resync ghosts after the last sync down.
    func hasSettled(_ member: Member) -> Bool {
        let status = ParticipantStatus.readAll(in: shared).first { $0.name == member.name }
        return Self.hasSettled(status: status, pid: member.pid, events: member.log.events())
    }

    /// ``hasSettled(_:)`` on what it read: the member's published status, its current pid and
    /// its log.
    static func hasSettled(status: ParticipantStatus?, pid: Int32, events: [JSONObject]) -> Bool {
        guard let status, status.isWriter, status.pid == pid, let epoch = status.epoch else { return false }
        guard
            let acquired = events.lastIndex(where: {
                $0.event == "lease.acquired" && $0["epoch"]?.intValue == epoch
            })
        else { return false }
        var lastDownDone: [String: Int] = [:]
        for name in Self.syncNames {
            guard
                let last = events[acquired...].lastIndex(where: {
                    $0.event == "sync" && $0["name"]?.stringValue == name
                }),
                events[last]["status"]?.stringValue == "done"
            else { return false }
            if Self.downSyncNames.contains(name) { lastDownDone[name] = last }
        }
        // Each sync down's clean resync ghosts ran after its last run.
        return lastDownDone.allSatisfy { name, done in
            events[done...].contains {
                $0.event?.hasPrefix("ghosts.") == true
                    && ($0["name"] == nil || $0["name"]?.stringValue == name)
            }
        }
    }

    /// Waits for the expected writer to hold the lease with its syncs done.
    func settle(round: Int, _ what: String) async throws {
        guard let writer = expectedWriter else { return }
        try await until(
            round: round, "\(what) (\(writer.name) writing, syncs done)", timeout: Self.settleTimeout
        ) { [self] in
            hasSettled(writer) && members.allSatisfy { $0.process?.isRunning == true }
        }
    }

    /// Waits until nobody holds the lease.
    func untilNobodyWrites(round: Int) async throws {
        try await until(round: round, "every participant to release the lease") { [self] in
            currentWriter == nil
                && ParticipantStatus.readAll(in: shared).allSatisfy {
                    !$0.isWriter || !$0.isAlive || $0.name == frozen?.member.name
                }
        }
    }

    /// A short account of where things stand, for a violation's message.
    func diagnosis() -> String {
        let states = ParticipantStatus.readAll(in: shared).map {
            "\($0.name)(pid \($0.pid)\($0.isAlive ? "" : ", dead")): \($0.lifecycle.rawValue)/\($0.phase)"
        }
        let lastEvents = members.map { member in
            let events = member.log.events().suffix(3).map { $0.event ?? "?" }
            return "\(member.name): …\(events.joined(separator: ", "))"
        }
        // A process that ended on its own (a crash) says how; a debugger or the Swift backtracer
        // tracing a crashed one shows as stopped.
        let ended = members.compactMap { member -> String? in
            guard let termination = member.process?.termination else { return nil }
            return "\(member.name) (pid \(member.pid)) ended: \(termination)"
        }
        return "participants " + states.joined(separator: "; ") + "; last events "
            + lastEvents.joined(separator: "; ") + (ended.isEmpty ? "" : "; " + ended.joined(separator: "; "))
    }
}
