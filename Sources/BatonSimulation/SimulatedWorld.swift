import BatonCoordinator
import BatonJSON
import BatonStore
import BatonSync

/// What a participant holds in the simulation: the epoch, the lock file (its generation, an
/// inode number) and the descriptor that locks it, and whether it was taken over (its epoch is
/// then already the store's).
struct SimulatedLease: Sendable, Hashable {
    var epoch: Int64
    var generation: UInt64
    var descriptor: Int
    var takenOver: Bool
}

typealias Machine = ParticipantMachine<SimulatedLease>

/// One thing that happens, at a simulated time. Those addressed to a participant name its
/// incarnation: a killed process's leftovers are dropped, a stopped one's wait for its thaw.
enum Happening {
    case input(Int, incarnation: Int, Machine.Event)
    /// A change in the shared directory this participant watches: it reads its lifecycle
    /// file and looks at the directory again.
    case directory(Int, incarnation: Int)
    case acquire(Int, incarnation: Int, run: Int, AcquireMachine.Event)
    case wake(Int, incarnation: Int, run: Int, token: Int)
    case beat(Int, incarnation: Int)
    case writer(Int, incarnation: Int, term: Int, WriterStep)
    case timer(Int, incarnation: Int, Machine.TimerID)
    case fault
    case thaw(Int, incarnation: Int)
    case restart(Int)
    /// SIGTERM.
    case terminate(Int, incarnation: Int)
    /// A step of a release that records its end.
    case release(Int, incarnation: Int, SimulatedLease, WriterStep)
    /// A server transaction becomes visible.
    case serverCommit(Int)
    /// The settle asks the host to the foreground again.
    case settleForeground

    var participant: (index: Int, incarnation: Int)? {
        switch self {
        case .input(let index, let incarnation, _), .directory(let index, let incarnation),
            .acquire(let index, let incarnation, _, _), .wake(let index, let incarnation, _, _),
            .beat(let index, let incarnation), .writer(let index, let incarnation, _, _),
            .timer(let index, let incarnation, _), .terminate(let index, let incarnation),
            .release(let index, let incarnation, _, _):
            return (index, incarnation)
        case .fault, .thaw, .restart, .serverCommit, .settleForeground:
            return nil
        }
    }
}

/// A writer's work: its start (the first fenced write), then each page of its syncs: fetched,
/// then saved in a transaction that holds SQLite's write lock.
enum WriterStep: Hashable {
    case start
    case fetch
    case begin
    case commit
}

/// The simulated kernel lock (`flock` on `D/writer.lock`, one lock per file generation) and
/// the store (its lease epoch and SQLite's write lock), shared by every participant.
struct SimulatedKernel {
    struct LockFile {
        var holder: Int?
        var waiters: [Int] = []
        var record: HeartbeatRecord?
    }

    struct Descriptor {
        var owner: Int
        var generation: UInt64
    }

    var files: [UInt64: LockFile] = [1: LockFile()]
    var pathGeneration: UInt64 = 1
    var lastGeneration: UInt64 = 1
    var descriptors: [Int: Descriptor] = [:]
    var lastDescriptor = 0
    /// The store's lease epoch, and who recorded each epoch.
    var storeEpoch: Int64 = 0
    var epochHolders: [Int64: Int] = [:]
    /// The participant inside a write transaction.
    var writeLock: Int?
    /// The sync down `accounts` as the store holds it.
    var accounts = SimulatedAccounts()
    /// The lease history's last interval: its epoch, when it was taken, and when it ended by
    /// itself (nil: open, or closed by the next take).
    var lastInterval: (epoch: Int64, acquired: UInt64, released: UInt64?)?

    static func identity(_ generation: UInt64) -> FileIdentity { FileIdentity(device: 1, inode: generation) }

    mutating func open(by owner: Int, generation: UInt64) -> Int {
        lastDescriptor += 1
        descriptors[lastDescriptor] = Descriptor(owner: owner, generation: generation)
        return lastDescriptor
    }

    func generation(of descriptor: Int) -> UInt64 { descriptors[descriptor]?.generation ?? 0 }

    /// `flock(LOCK_EX | LOCK_NB)`.
    mutating func tryLock(_ descriptor: Int) -> Bool {
        let generation = generation(of: descriptor)
        guard files[generation]?.holder == nil else { return files[generation]?.holder == descriptor }
        files[generation]?.holder = descriptor
        return true
    }
}

/// Many participants' real machines (``ParticipantMachine``, ``AcquireMachine`` and its
/// ``TakeoverWatch``) in one process, on one thread, against a simulated kernel lock, shared
/// directory, store and clock, with faults and the order of every pending event drawn from the
/// seed. The chaos run's invariants are checked after every step.
public final class Simulation {
    let options: SimulationOptions
    var random: SplitMix64
    var queue = EventQueue<Happening>()
    var now: UInt64 = 0
    var kernel = SimulatedKernel()
    var server = SimulatedServer()
    /// When the settle asked the host to the foreground (its run from then on is judged).
    var settleForegroundAt: UInt64?
    /// Until when every write fails for want of room.
    var diskFullUntil: UInt64 = 0
    /// Page requests still to fail with a 503.
    var serverErrorsLeft = 0
    var participants: [SimulatedParticipant] = []
    var steps = 0
    var handOvers = 0
    var takeovers = 0
    var kills = 0
    var freezes = 0
    var freezesInTransaction = 0
    var commits = 0
    var fencedCommits = 0
    var staleStarts = 0
    var syncFailures = 0
    var faultsOn: Bool
    var settling = false
    var violation: SimulationViolation?
    /// When a kill or a freeze last happened (a waiter's wait is judged only without one).
    var lastDisturbance: UInt64 = 0
    /// Since when the highest-priority foreground waiter has waited behind a lower-priority writer.
    var outranked: (waiter: Int, since: UInt64)?
    /// Since when a foreground participant has wanted the lease with nobody writing.
    var idleSince: UInt64?
    private var recent: [(UInt64, Happening)] = []
    private var recentNext = 0

    static let term: Duration = .seconds(2)
    static let termNanos: UInt64 = 2_000_000_000
    /// How long a higher-priority waiter may wait behind a running lower-priority writer with
    /// no kill or freeze meanwhile: the stop's deadline, a lease term, and room for the rounds.
    static let outrankedBound: UInt64 = 12_000_000_000
    /// How long the lease may go unused while a foreground participant wants it, with no kill
    /// or freeze meanwhile: a stop past its deadline, SQLite's busy timeout and a lease term.
    static let progressBound: UInt64 = 20_000_000_000
    /// How long a running writer may hold a lease the store has passed: a lease term for its
    /// heartbeat to see the lock file replaced, and room for its stop to begin.
    static let passedBound: UInt64 = 3_000_000_000
    /// How long a participant may run on after SIGTERM: its stop's deadline and a margin.
    static let terminateBound: UInt64 = 8_000_000_000
    /// How long the final settle may take.
    static let settleBound: UInt64 = 60_000_000_000

    public init(_ options: SimulationOptions) {
        self.options = options
        random = SplitMix64(seed: options.seed)
        faultsOn = options.faults
        let priorities = [100, 30, 20, 15, 12, 10, 8, 5]
        for index in 0..<options.participants {
            participants.append(
                SimulatedParticipant(
                    index: index, name: index == 0 ? "host" : "ext\(index)", priority: priorities[index],
                    pid: Int32(1000 + index)))
        }
    }

    /// Runs to the end: the hand-overs asked for with faults, then the settle without them.
    public static func run(_ options: SimulationOptions) -> SimulationOutcome {
        let simulation = Simulation(options)
        simulation.play()
        return simulation.outcome
    }

    var outcome: SimulationOutcome {
        SimulationOutcome(
            options: options, steps: steps, handOvers: handOvers, takeovers: takeovers, kills: kills,
            freezes: freezes, freezesInTransaction: freezesInTransaction, commits: commits,
            fencedCommits: fencedCommits, staleStarts: staleStarts, syncFailures: syncFailures,
            simulatedSeconds: Double(now) / 1e9,
            violation: violation,
            trace: violation == nil ? [] : trace())
    }

    func play() {
        seedServer()
        for participant in participants {
            participant.lifecycleFile = participant.index == 0 ? .foreground : .background
            schedule(.directory(participant.index, incarnation: participant.incarnation), after: latency())
        }
        schedule(.fault, after: 50_000_000)
        var settleStarted: UInt64?
        while violation == nil, let (time, happening) = queue.pop() {
            now = time
            steps += 1
            remember(happening)
            handle(happening)
            if violation == nil { checkInvariants() }
            if settleStarted == nil, handOvers >= options.handOvers {
                settleStarted = now
                beginSettle()
            }
            if let settleStarted {
                if settled() { return }
                if now - settleStarted > Self.settleBound {
                    fail(
                        "with faults off, the host writes and its syncs finish",
                        "not settled after \(Self.settleBound / 1_000_000_000) s: \(describeParticipants())")
                    return
                }
            }
        }
        if violation == nil, !settled() {
            fail("the run could go on", "no event pending and not settled: \(describeParticipants())")
        }
    }

    // MARK: - Scheduling

    func schedule(_ happening: Happening, after delay: UInt64) {
        queue.push(happening, at: now &+ delay, tie: random.next())
    }

    /// A scheduling delay: a few microseconds, now and then tens of milliseconds (a loaded CPU).
    func latency() -> UInt64 {
        let base = 5_000 + random.next() % 100_000
        guard faultsOn, random.next() % 100 == 0 else { return base }
        return base + random.next() % 50_000_000
    }

    func handle(_ happening: Happening) {
        if let (index, incarnation) = happening.participant {
            let participant = participants[index]
            guard participant.incarnation == incarnation, participant.state != .dead else { return }
            guard participant.state == .running else {
                participant.deferred.append(happening)
                return
            }
        }
        switch happening {
        case .input(let index, _, let event):
            feed(participants[index], [event])
        case .directory(let index, _):
            let participant = participants[index]
            feed(
                participant,
                participant.lifecycleEvents(wallMillis: wallMillis) + [.directoryRead(storeProblem: nil)])
        case .acquire(let index, _, let run, let event):
            advanceAcquisition(participants[index], run: run, event)
        case .wake(let index, _, let run, let token):
            let participant = participants[index]
            guard let acquisition = participant.acquisition, acquisition.run == run,
                acquisition.sleepToken == token
            else { return }
            participant.acquisition?.sleepToken = nil
            advanceAcquisition(participant, run: run, .woke)
        case .beat(let index, _):
            beat(participants[index])
        case .writer(let index, _, let term, let step):
            writerStep(participants[index], term: term, step)
        case .timer(let index, _, let id):
            let participant = participants[index]
            guard participant.timers.remove(id) != nil else { return }
            feed(participant, [.timerFired(id)])
        case .fault:
            injectFault()
        case .thaw(let index, let incarnation):
            let participant = participants[index]
            guard participant.incarnation == incarnation else { return }
            thaw(participant)
        case .restart(let index):
            restart(participants[index])
        case .terminate(let index, _):
            terminate(participants[index])
        case .release(let index, _, let lease, let step):
            releaseStep(participants[index], lease, step)
        case .serverCommit(let id):
            server.commit(id)
        case .settleForeground:
            settleForegroundAt = now
            participants[0].lifecycleFile = .foreground
            schedule(.directory(0, incarnation: participants[0].incarnation), after: latency())
        }
    }

    var wallMillis: Int64 { 1_800_000_000_000 + Int64(now / 1_000_000) }
    var nowMillis: Double { Double(now) / 1e6 }

    // MARK: - Invariants

    func fail(_ invariant: String, _ detail: String) {
        guard violation == nil else { return }
        violation = SimulationViolation(
            invariant: invariant, detail: detail, step: steps, atMillis: nowMillis)
    }

    func checkInvariants() {
        // One writer per epoch: at most one live participant has started writing with the
        // store's epoch. (A holding that began on a lock file replaced meanwhile may carry the
        // same number; its first write finds the fence dead and it steps down.)
        var writers = 0
        for participant in participants where participant.state != .dead && participant.machine.admitsEdits {
            if case .writer(let lease) = participant.machine.phase, lease.epoch == kernel.storeEpoch {
                writers += 1
            }
        }
        if writers > 1 {
            let names = participants.filter {
                guard $0.state != .dead, $0.machine.admitsEdits, case .writer(let lease) = $0.machine.phase
                else {
                    return false
                }
                return lease.epoch == kernel.storeEpoch
            }.map(\.name)
            fail("one writer per epoch", "\(names) all write with epoch \(kernel.storeEpoch)")
        }
        checkOutranked()
        checkProgress()
        checkPassedHoldings()
        checkTerminated()
    }

    /// A configured sync that failed in a writer's term has its retry, or a problem, published:
    /// checked as the machine answers the failure (the retry stays published until the sync is
    /// done or the term ends).
    func checkFailedSync(_ participant: SimulatedParticipant, _ name: String) {
        guard participant.state == .running, participant.machine.admitsEdits,
            case .writer = participant.machine.phase, participant.machine.problem == nil,
            !participant.machine.retrying.contains(where: { $0.name == name })
        else { return }
        fail(
            "every failed sync has a retry or a problem published",
            "\(participant.name)'s sync \(name) failed and its status shows neither a retry nor a problem")
    }

    /// A participant sent SIGTERM hands everything back and exits within its stop's deadline
    /// and a margin, unless it is frozen meanwhile.
    func checkTerminated() {
        for participant in participants where participant.state == .running {
            guard let since = participant.terminatedAt,
                let late = overdue(
                    since: since, quietSince: participant.lastFrozen ?? 0, bound: Self.terminateBound)
            else { continue }
            fail(
                "a SIGTERM ends the participant",
                "\(participant.name) (pid \(participant.pid)) is still \(participant.machine.phase.name.rawValue) \(late / 1_000_000) ms after its SIGTERM"
            )
        }
    }

    /// A writer whose epoch the store has passed (another holding recorded a newer one) steps
    /// down within the bound once it runs: it never keeps writing, or trying to, with a dead
    /// fence.
    func checkPassedHoldings() {
        for participant in participants {
            guard participant.state == .running, case .writer(let lease) = participant.machine.phase,
                lease.epoch < kernel.storeEpoch
                    || kernel.epochHolders[lease.epoch].map({ $0 != participant.index }) == true
            else {
                participant.passedSince = nil
                continue
            }
            let since = participant.passedSince ?? now
            participant.passedSince = since
            if let late = overdue(
                since: since, quietSince: participant.lastFrozen ?? 0, bound: Self.passedBound)
            {
                fail(
                    "a holding the store has passed steps down",
                    "\(participant.name) still writes with epoch \(lease.epoch), \(late / 1_000_000) ms after the store's moved on (now \(kernel.storeEpoch))"
                )
            }
        }
    }

    /// A foreground participant waiting for the lease while nobody writes gets it within the
    /// bound, unless a kill or a freeze intervened: the lease is never wedged.
    func checkProgress() {
        var working = false
        var waiting = false
        for participant in participants where participant.state == .running {
            if participant.machine.desired == .foreground { waiting = true }
            if participant.machine.admitsEdits, case .writer = participant.machine.phase { working = true }
        }
        guard waiting, !working else {
            idleSince = nil
            return
        }
        let since = idleSince ?? now
        idleSince = since
        if let late = overdue(since: since, quietSince: lastDisturbance, bound: Self.progressBound) {
            fail(
                "a waiting participant gets the lease",
                "for \(late / 1_000_000) ms a foreground participant has wanted the lease and nobody has written, with no kill or freeze meanwhile: \(describeParticipants())"
            )
        }
    }

    /// A participant of higher priority, foreground and waiting, gets the lease from a running
    /// lower-priority writer within the bound, unless a kill or a freeze intervened.
    func checkOutranked() {
        // Plain loops: this runs after every step.
        var waiter: SimulatedParticipant?
        var writer: SimulatedParticipant?
        for participant in participants where participant.state == .running {
            if participant.machine.desired == .foreground, participant.machine.phase.name == .waitingForLease,
                participant.priority > waiter?.priority ?? .min
            {
                waiter = participant
            }
            if writer == nil, case .writer = participant.machine.phase { writer = participant }
        }
        guard let waiter, let writer, writer.priority < waiter.priority else {
            outranked = nil
            return
        }
        if outranked?.waiter != waiter.index { outranked = (waiter.index, now) }
        guard let since = outranked?.since,
            let late = overdue(since: since, quietSince: lastDisturbance, bound: Self.outrankedBound)
        else { return }
        fail(
            "a higher-priority waiter gets the lease",
            "\(waiter.name) (priority \(waiter.priority)) has waited \(late / 1_000_000) ms behind \(writer.name) (priority \(writer.priority)), running, with no kill or freeze meanwhile"
        )
    }

    /// How long a condition that has held since `since` is past `bound`, counted from the later
    /// of `since` and `quietSince` (the last kill, freeze or thaw that excuses it); nil while
    /// within the bound.
    func overdue(since: UInt64, quietSince: UInt64, bound: UInt64) -> UInt64? {
        let from = max(since, quietSince)
        guard now > from, now - from > bound else { return nil }
        return now - from
    }

    /// Whether the final settle is done: the host writes (a term begun after the settle asked
    /// it to the foreground), its syncs finished; then its store must hold the server's accounts.
    func settled() -> Bool {
        guard settling, let foregroundAt = settleForegroundAt else { return false }
        let host = participants[0]
        guard host.state == .running, case .writer(let lease) = host.machine.phase, host.machine.admitsEdits,
            lease.epoch == kernel.storeEpoch, let writer = host.writer, writer.since > foregroundAt,
            writer.syncs.isEmpty, writer.page == nil, kernel.accounts.completedAt > foregroundAt
        else { return false }
        guard let queried = kernel.accounts.lastQueriedAt, queried > foregroundAt else {
            // The run completed resumed one stopped before the settle: what changed before its
            // position is for the next run. Background, then foreground again.
            settleForegroundAt = nil
            host.lifecycleFile = .background
            schedule(.directory(0, incarnation: host.incarnation), after: latency())
            schedule(.settleForeground, after: 1_000_000_000)
            return false
        }
        let differing = server.records.filter { kernel.accounts.soup[$0.key] != $0.value }.keys.sorted()
        if !differing.isEmpty {
            let shown = differing.prefix(5).map { id in
                "\(id): server \(server.records[id] ?? 0), store \(kernel.accounts.soup[id].map(String.init) ?? "none")"
            }
            fail(
                "the store holds the server's records",
                "\(differing.count) accounts differ after a full run with faults off (\(shown.joined(separator: "; "))); the last run asked from \(kernel.accounts.lastSince.map(String.init) ?? "the start")"
            )
        }
        return true
    }

    func beginSettle() {
        settling = true
        faultsOn = false
        diskFullUntil = 0
        serverErrorsLeft = 0
        // Every server transaction still in flight commits now, with its earlier stamp; every
        // participant goes to the background and, a second later, the host to the foreground:
        // its run must bring them all.
        server.commitAll()
        schedule(.settleForeground, after: 1_000_000_000)
        for participant in participants {
            switch participant.state {
            case .dead: restart(participant)
            case .stopped, .hung: thaw(participant)
            default: break
            }
            let lifecycle: SimulatedParticipant.LifecycleFile = .background
            if participant.lifecycleFile != lifecycle {
                participant.lifecycleFile = lifecycle
                schedule(
                    .directory(participant.index, incarnation: participant.incarnation), after: latency())
            }
        }
    }

    func describeParticipants() -> String {
        participants.map { participant in
            "\(participant.name) pid \(participant.pid) \(participant.state.rawValue) \(participant.machine.phase.name.rawValue) lifecycle \(participant.machine.desired.rawValue)"
        }.joined(separator: "; ")
            + "; store epoch \(kernel.storeEpoch), write lock \(kernel.writeLock.map { participants[$0].name } ?? "free")"
    }

    // MARK: - Trace

    private func remember(_ happening: Happening) {
        let capacity = max(1, options.traceLength)
        if recent.count < capacity {
            recent.append((now, happening))
        } else {
            recent[recentNext] = (now, happening)
        }
        recentNext = (recentNext + 1) % capacity
    }

    func trace() -> [String] {
        let ordered =
            recent.count < max(1, options.traceLength)
            ? recent : Array(recent[recentNext...] + recent[..<recentNext])
        return ordered.map { time, happening in
            let at = String(format: "%.3f", Double(time) / 1e6)
            if let (index, _) = happening.participant {
                return "\(at) ms \(participants[index].name): \(describe(happening))"
            }
            return "\(at) ms: \(describe(happening))"
        }
    }

    private func describe(_ happening: Happening) -> String {
        switch happening {
        case .input(_, _, let event): "event \(event)"
        case .directory: "reads the directory"
        case .acquire(_, _, let run, let event): "acquisition \(run): \(event)"
        case .wake(_, _, let run, _): "acquisition \(run) wakes"
        case .beat: "heartbeat"
        case .writer(_, _, let term, let step): "writer term \(term): \(step)"
        case .timer(_, _, let id): "timer \(id)"
        case .fault: "fault"
        case .thaw(let index, _): "thaw \(participants[index].name)"
        case .restart(let index): "restart \(participants[index].name)"
        case .terminate: "SIGTERM"
        case .release(_, _, let lease, let step): "release of epoch \(lease.epoch): \(step)"
        case .serverCommit(let id): "server transaction \(id) commits"
        case .settleForeground: "the host is asked to the foreground"
        }
    }
}
