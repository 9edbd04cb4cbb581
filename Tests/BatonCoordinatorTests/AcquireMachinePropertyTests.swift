import BatonJSON
import BatonStore
import Testing

@testable import BatonCoordinator

/// Drives an acquire machine the way `WriterLease.acquire` does, answering each action from a
/// small random world (a lock file that gets replaced, a holder that beats, freezes and thaws,
/// kernel grants, priority, clocks, cancellation, failures), and checks after each action what
/// must always hold. Violations are collected (not expected at once), so a deliberately wrong
/// machine can show that they are caught.
struct AcquireSimulation {
    typealias Handle = (inout Acquire, Acquire.Event) -> Acquire.Action

    var machine: Acquire
    let handle: Handle
    var random: SplitMix64
    let term: Duration = .milliseconds(200)
    /// Each run's frozen-holder policy: thaw or kill, at once or after up to 60 ms (the wait
    /// policy never acts, and the event-sequence tests cover it).
    let frozenHolder: FrozenHolder
    var policyRandom: SplitMix64
    let interval: Duration = .milliseconds(100)
    let firstLook: UInt64
    let base = ContinuousClock.now
    let deadline: ContinuousClock.Instant?

    // The world.
    var now: UInt64 = acquireStart
    var elapsed: Duration = .zero
    var lockFile: FileIdentity? = lockFile1
    var holderBeat: UInt64 = acquireStart
    var holderFrozen = false

    // What the interpreter holds, as the simulation tracks it.
    var kept: FileIdentity??
    var kernelWaits: [FileIdentity?] = []
    var inHand: (stillAtPath: Bool, granted: Bool)?
    var holding = false
    var reported: WriterLease.Blocked?
    var watching = false
    /// A takeover was held up, and the machine has not read the clock since.
    var blockedUnread = false
    /// Since when a held-up takeover's holder counts as frozen (its last sign of life), and when
    /// the frozen holder's policy last acted.
    var blockedClock: UInt64?
    var unfrozeClock: UInt64?
    /// The holder's last sign of life in the takeover asked last (its observation's time less
    /// the silence it was decided on).
    var pursuedSilenceStart: UInt64?

    // What the machine was told, to judge what it asks next.
    var lastEvent: Acquire.Event?
    var mayTry: Bool?
    var seenLockFile: FileIdentity??
    var latestTime: UInt64 = acquireStart
    var shadow: TakeoverWatch
    var verdict: Acquire.Pursuit?
    var heldUp: Acquire.Pursuit?
    var cancelled = false
    var failed = false
    var pastDeadline = false
    var stopping = false

    /// What went wrong, each with the trace leading to it.
    let log = ViolationLog()
    var violations: [String] { log.violations }
    var trace: [String] = []
    var seen: Set<String> = []
    var finished: Acquire.Ending?

    init(seed: UInt64, handle: @escaping Handle = { $0.handle($1) }) {
        random = SplitMix64(seed: seed)
        self.handle = handle
        // Drawn from a generator of their own, so the rest of the run is what it was before.
        var policyRandom = SplitMix64(seed: seed ^ 0x5EED)
        frozenHolder = FrozenHolder(
            policy: policyRandom.chance(0.5) ? .thaw : .kill,
            bound: policyRandom.chance(0.5) ? .zero : .milliseconds(policyRandom.int(1...60)))
        self.policyRandom = policyRandom
        deadline = random.chance(0.4) ? base + .milliseconds(random.int(20...1_500)) : nil
        machine = Acquire(
            now: acquireStart, term: term, firstLook: .milliseconds(20), interval: interval,
            deadline: deadline, frozenHolder: frozenHolder)
        firstLook = acquireStart + 20 * ms
        shadow = TakeoverWatch(defaultTerm: term)
    }

    func check(_ holds: Bool, _ message: @autoclosure () -> String) {
        guard !holds else { return }
        log.violations.append("\(message())\n" + trace.suffix(30).joined(separator: "\n"))
    }

    /// Runs until the machine finishes; after `steps` actions, the next round is cancelled.
    mutating func run(steps: Int) {
        var action = machine.asked
        for count in 0..<(steps + 60) {
            stopping = count >= steps
            trace = trace.suffix(60) + ["\(lastEvent.map { "\($0)" } ?? "start") -> \(action)"]
            checkBefore(action)
            if case .finish(let ending) = action {
                finish(ending)
                return
            }
            let event = answer(action)
            if random.chance(0.03) { outOfTurn(action) }
            lastEvent = event
            action = handle(&machine, event)
        }
        check(false, "no finish 60 actions after the cancellation")
    }

    /// An event that answers nothing asked changes nothing, and the question stands.
    mutating func outOfTurn(_ action: Acquire.Action) {
        let wrong: [Acquire.Event] = [
            .mayTry(true), .cancelled, .probed(.busy(lockFile1)), .notGranted, .granted(stillAtPath: true),
            .lockFile(lockFile1), .clock(now), .deadlineClock(base), .holderObserved(frozen(at: now)),
            .takeover(.taken), .began, .woke, .done,
        ].filter { !Self.answers($0, action) }
        guard let event = wrong.randomElement(using: &random) else { return }
        let phase = machine.phase
        let again = handle(&machine, event)
        check(again == action && machine.phase == phase, "\(event) out of turn answered \(again)")
        seen.insert("out of turn")
    }

    static func answers(_ event: Acquire.Event, _ action: Acquire.Action) -> Bool {
        switch (action, event) {
        case (.askMayTry, .mayTry), (.beginRound, .mayTry), (.beginRound, .cancelled), (.probe, .probed),
            (.takeGrant, .notGranted), (.takeGrant, .granted), (.lookAtLockFile, .lockFile),
            (.readClock, .clock), (.readDeadlineClock, .deadlineClock), (.observeHolder, .holderObserved),
            (.takeOver, .takeover), (.begin, .began), (.sleep, .woke):
            return true
        case (.watchChanges, .done), (.closeKept, .done), (.startKernelWait, .done),
            (.abandonKernelWait, .done), (.report, .done), (.unlock, .done):
            return true
        default:
            return false
        }
    }
}

extension AcquireSimulation {
    /// What must hold of `action`, given everything the machine was told.
    mutating func checkBefore(_ action: Acquire.Action) {
        check(kernelWaits.count <= 1, "two kernel waits outstanding")
        check(kept == nil || kernelWaits.isEmpty, "a kept descriptor and a kernel wait at once")
        if inHand != nil {
            check([.begin, .unlock, .askMayTry].contains(action), "a lock in hand, and \(action)")
        }
        if cancelled { checkCleanUp(action, ending: .cancelled) }
        if pastDeadline { checkCleanUp(action, ending: .timedOut) }
        if failed { checkCleanUp(action, ending: .failed) }
        if mayTry == false, !cancelled, !pastDeadline {
            // Holding back: nothing tried, nothing waited on in the kernel, nothing taken over.
            switch action {
            case .probe, .startKernelWait, .takeGrant, .observeHolder, .takeOver, .begin, .lookAtLockFile:
                check(false, "\(action) while holding back")
            default: break
            }
        }
        switch action {
        case .probe(let reuseKept):
            if reuseKept {
                check(kept != nil && kept == seenLockFile, "reuses a descriptor not on the file named now")
            }
            check(!watching || seenLockFile != nil, "probes without looking at the lock file")
        case .watchChanges:
            check(!watching, "watches twice")
        case .beginRound:
            check(watching, "a round before watching for changes")
        case .startKernelWait:
            check(kept != nil, "a kernel wait with no descriptor kept from a busy probe")
        case .abandonKernelWait:
            check(kernelWaits.count == 1, "gives up a kernel wait that is not there")
        case .closeKept:
            check(kept != nil, "closes a descriptor not kept")
        case .takeGrant:
            check(kernelWaits.count == 1, "takes a grant with no kernel wait")
        case .observeHolder(let generation):
            check(latestTime >= firstLook, "looks at the holder before the first look is due")
            check(seenLockFile == generation, "observes another file than the one named")
        case .takeOver(let observation, let silent, let pursued):
            checkTakeover(Acquire.Pursuit(observation: observation, silentNanos: silent), pursued: pursued)
            pursuedSilenceStart = observation.now - min(silent, observation.now)
        case .report(let blocked):
            check(blocked != reported, "reports \(String(describing: blocked)) again")
        case .unfreeze(let pid, let policy):
            check(pid == 42 && policy == frozenHolder.policy, "acts on pid \(pid) by \(policy)")
            guard case .clock(let at) = lastEvent, let since = unfrozeClock ?? blockedClock else {
                check(false, "acts on a frozen holder without timing the block")
                break
            }
            check(
                at - since >= UInt64(frozenHolder.bound.inNanoseconds), "acts before the bound passed")
        case .begin:
            check(inHand?.stillAtPath == true, "begins on no lock, or a lock on a replaced file")
            if inHand?.granted == true {
                check(lastEvent == .mayTry(true), "begins a grant without asking mayTry again")
            }
        case .unlock:
            check(inHand != nil, "unlocks nothing")
            check(
                inHand?.stillAtPath == false || lastEvent == .mayTry(false),
                "lets go of a lock it could hold")
        case .sleep(let duration):
            checkSleep(duration)
        case .finish(let ending):
            checkFinish(ending)
        default: break
        }
    }

    /// Once it is to end: only the clean-up, then the end.
    mutating func checkCleanUp(_ action: Acquire.Action, ending: Acquire.Ending) {
        switch action {
        case .closeKept, .abandonKernelWait, .report(nil): break
        case .finish(let finish): check(finish == ending, "ends \(finish), not \(ending)")
        default: check(false, "\(action) on its way to \(ending)")
        }
    }

    mutating func checkTakeover(_ takeover: Acquire.Pursuit, pursued: Bool) {
        if pursued {
            check(takeover == heldUp, "pursues a takeover never held up")
            check(
                seenLockFile == takeover.observation.generation,
                "pursues a takeover on another lock file")
        } else {
            check(
                takeover == verdict && lastEvent == .holderObserved(takeover.observation),
                "takes over without TakeoverWatch's verdict on what it just saw")
        }
    }

    mutating func checkSleep(_ duration: Duration) {
        let longest = [interval, term / 4, .milliseconds(20), Acquire.afterMove].max()!
        check(duration >= .milliseconds(1) && duration <= longest, "sleeps \(duration)")
        check(inHand == nil, "sleeps with a lock in hand")
        check(
            (machine.kernelWait != nil) == !kernelWaits.isEmpty,
            "the machine and the world disagree on the wait")
        check((machine.kept != nil) == (kept != nil), "the machine and the world disagree on the descriptor")
        if mayTry == false {
            check(kernelWaits.isEmpty, "holds back with a kernel wait")
            check(machine.phase == .holdingBack, "holds back in phase \(machine.phase)")
        }
        if let deadline, case .deadlineClock(let read) = lastEvent {
            check(duration <= max(deadline - read, .milliseconds(1)), "sleeps past the deadline")
        } else {
            check(deadline == nil, "sleeps without checking the deadline")
        }
    }

    mutating func checkFinish(_ ending: Acquire.Ending) {
        check(kernelWaits.isEmpty, "ends \(ending) with a kernel wait outstanding")
        check(kept == nil, "ends \(ending) with a descriptor kept")
        check(inHand == nil, "ends \(ending) with a lock in hand")
        check(reported == nil, "ends \(ending) with a block still reported")
        check((ending == .held) == holding, "ends \(ending), holding: \(holding)")
        check((ending == .cancelled) == cancelled, "ends \(ending), cancelled: \(cancelled)")
        check((ending == .timedOut) == pastDeadline, "ends \(ending), past the deadline: \(pastDeadline)")
        check((ending == .failed) == failed, "ends \(ending), failed: \(failed)")
        check(machine.phase == .finished(ending), "finished in phase \(machine.phase)")
    }

    /// Every event after the end answers the end again.
    mutating func finish(_ ending: Acquire.Ending) {
        finished = ending
        seen.insert("\(ending)")
        for event in [Acquire.Event.done, .woke, .failed, .cancelled, .mayTry(true)] {
            let again = handle(&machine, event)
            check(again == .finish(ending), "\(event) after the end")
        }
    }
}

extension AcquireSimulation {
    /// Carries `action` out in the world and answers it.
    mutating func answer(_ action: Acquire.Action) -> Acquire.Event {
        switch action {
        case .askMayTry:
            mayTry = random.chance(0.8)
            return .mayTry(mayTry!)
        case .beginRound:
            if stopping || random.chance(0.01) {
                cancelled = true
                return .cancelled
            }
            seenLockFile = nil
            mayTry = random.chance(0.8)
            if mayTry == false { seen.insert("holding back") }
            return .mayTry(mayTry!)
        case .probe(let reuseKept):
            return probe(reuseKept: reuseKept)
        case .watchChanges:
            watching = true
        case .takeGrant:
            return takeGrant()
        case .lookAtLockFile:
            if random.chance(0.08) {
                lockFile = [
                    lockFile1, lockFile2, FileIdentity(device: 1, inode: UInt64(random.int(30...99))), nil,
                ]
                .randomElement(using: &random)!
                seen.insert("new lock file")
            }
            seenLockFile = .some(lockFile)
            return .lockFile(lockFile)
        case .closeKept:
            kept = nil
        case .startKernelWait:
            kernelWaits.append(kept ?? nil)
            kept = nil
        case .abandonKernelWait:
            _ = kernelWaits.popLast()
        case .readClock:
            tick(upTo: 30)
            latestTime = max(latestTime, now)
            if blockedUnread {
                blockedUnread = false
                // The block counts from the holder's last sign of life, as the takeover saw it.
                if blockedClock == nil { blockedClock = pursuedSilenceStart ?? now }
            }
            return .clock(now)
        case .readDeadlineClock:
            tick(upTo: 5)
            let read = base + elapsed
            if let deadline, read >= deadline { pastDeadline = true }
            return .deadlineClock(read)
        case .observeHolder(let generation):
            return observe(generation)
        case .takeOver(let observation, let silent, _):
            return takeOver(Acquire.Pursuit(observation: observation, silentNanos: silent))
        case .report(let blocked):
            reported = blocked
            if blocked != nil { seen.insert("reported") }
        case .unfreeze:
            seen.insert("unfroze")
            unfrozeClock = now
            return .unfroze(policyRandom.chance(0.7) ? "resumed it (SIGCONT)" : nil)
        case .begin:
            inHand = nil
            if random.chance(0.03) { return fail() }
            holding = true
            return .began
        case .unlock:
            inHand = nil
        case .sleep(let duration):
            tick(upTo: Int(duration.inWholeMilliseconds))
            if machine.phase == .pursuing { seen.insert("pursuing") }
            return .woke
        case .finish:
            break
        }
        return .done
    }

    mutating func tick(upTo millis: Int) {
        let step = Int64(random.int(0...max(millis, 1)))
        now += UInt64(step) * ms
        elapsed += .milliseconds(step)
    }

    mutating func fail() -> Acquire.Event {
        failed = true
        seen.insert("failed")
        return .failed
    }

    mutating func probe(reuseKept: Bool) -> Acquire.Event {
        let identity = reuseKept ? (kept ?? nil) : lockFile
        kept = nil
        if reuseKept { seen.insert("reused") }
        if random.chance(0.02) { return fail() }
        guard random.chance(0.1) else {
            kept = .some(identity)
            return .probed(.busy(identity))
        }
        let stillAtPath = random.chance(0.9)
        inHand = (stillAtPath, false)
        return .probed(.locked(stillAtPath: stillAtPath))
    }

    mutating func takeGrant() -> Acquire.Event {
        guard let waitedOn = kernelWaits.last, random.chance(0.1) else { return .notGranted }
        kernelWaits.removeLast()
        if random.chance(0.03) { return fail() }
        let stillAtPath = waitedOn == lockFile && random.chance(0.95)
        inHand = (stillAtPath, true)
        seen.insert("granted")
        return .granted(stillAtPath: stillAtPath)
    }

    /// The holder beats now and then, freezes (seen stopped, or not) and thaws.
    mutating func observe(_ generation: FileIdentity?) -> Acquire.Event {
        tick(upTo: 10)
        if random.chance(0.1) { holderFrozen.toggle() }
        if !holderFrozen, random.chance(0.7) { holderBeat = now - UInt64(random.int(0...40)) * ms }
        let record = HeartbeatRecord(pid: 42, epoch: 7, beat: holderBeat, termMillis: 200)
        let state: ProcessState = holderFrozen && random.chance(0.5) ? .stopped : .running
        let observation = TakeoverWatch.Observation(
            generation: generation, record: record, content: record.line, holderState: state, now: now)
        latestTime = max(latestTime, now)
        switch shadow.observe(observation) {
        case .takeOver(let silent): verdict = Acquire.Pursuit(observation: observation, silentNanos: silent)
        case .wait: verdict = nil
        }
        return .holderObserved(observation)
    }

    mutating func takeOver(_ takeover: Acquire.Pursuit) -> Acquire.Event {
        verdict = nil
        heldUp = nil
        blockedUnread = false
        switch random.int(0...19) {
        case 0...5:
            (blockedClock, unfrozeClock) = (nil, nil)
            holding = true
            seen.insert("taken over")
            return .takeover(.taken)
        case 6...10:
            (blockedClock, unfrozeClock) = (nil, nil)
            return .takeover(.moved)
        case 11...18:
            heldUp = takeover
            var blocked = WriterLease.Blocked(
                name: "host", pid: 42, holderState: .stopped, message: "stopped")
            if random.chance(0.3) { blocked.holderState = .hung }
            blockedUnread = true
            return .takeover(.blocked(blocked))
        default:
            return fail()
        }
    }
}

extension AcquireSimulation {
    /// Runs `runs` simulations per seed; returns every violation and what the runs went through.
    static func explore(
        seeds: [UInt64], runs: Int, handle: @escaping Handle = { $0.handle($1) }
    ) -> (violations: [String], seen: Set<String>) {
        var violations: [String] = []
        var seen: Set<String> = []
        for seed in seeds {
            for run in 0..<runs {
                var simulation = AcquireSimulation(seed: seed &* 1_000 &+ UInt64(run), handle: handle)
                simulation.run(steps: simulation.random.int(5...400))
                violations += simulation.violations
                seen.formUnion(simulation.seen)
            }
        }
        return (violations, seen)
    }
}

@Suite("Acquire machine: invariants over random event sequences (no I/O)")
struct AcquireMachinePropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 42, 9173, 130_363, 8_675_309]

    @Test(
        "one kernel wait at most, held only when granted or taken over, clean ends, takeovers on the watch's word",
        arguments: seeds)
    func randomSequences(seed: UInt64) {
        let (violations, seen) = AcquireSimulation.explore(seeds: [seed], runs: 60)
        let clean = violations.isEmpty
        #expect(clean, "\(violations.count) violations; the first:\n\(violations.first ?? "")")
        // The runs went everywhere the rules do.
        for reached in [
            "held", "cancelled", "timedOut", "failed", "holding back", "granted", "taken over", "pursuing",
            "reported", "reused", "new lock file", "out of turn", "unfroze",
        ] {
            #expect(seen.contains(reached), "no run reached \(reached)")
        }
    }

    @Test("a deliberately wrong machine is caught", arguments: AcquireMutant.allCases)
    func mutantCaught(mutant: AcquireMutant) {
        let (violations, _) = AcquireSimulation.explore(seeds: [1, 2, 3], runs: 40, handle: mutant.handle)
        let caught = violations.contains { $0.hasPrefix(mutant.caughtBy) }
        #expect(caught, "the mutant that \(mutant.rawValue) went unnoticed")
    }
}

final class ViolationLog {
    var violations: [String] = []
}

/// Wrong machines, each breaking one rule by rewriting what the real one answers.
enum AcquireMutant: String, CaseIterable, Sendable {
    case forgetsWaitWhenCancelled = "forgets the kernel wait when cancelled"
    case keepsOldWait = "keeps the old kernel wait on a new lock file"
    case beginsGrantUnasked = "begins a grant without asking mayTry again"
    case takesOverOnSight = "takes over on first sight"
    case neverUnblocks = "never says the block is over"

    /// The start of the violation that must catch it.
    var caughtBy: String {
        switch self {
        case .forgetsWaitWhenCancelled: "ends cancelled with a kernel wait outstanding"
        case .keepsOldWait: "two kernel waits outstanding"
        case .beginsGrantUnasked: "begins a grant without asking mayTry again"
        case .takesOverOnSight: "takes over without TakeoverWatch's verdict"
        case .neverUnblocks: "ends held with a block still reported"
        }
    }

    var handle: AcquireSimulation.Handle {
        switch self {
        case .forgetsWaitWhenCancelled:
            return { machine, event in
                let action = machine.handle(event)
                return event == .cancelled && action == .abandonKernelWait ? machine.handle(.done) : action
            }
        case .keepsOldWait:
            return { machine, event in
                let action = machine.handle(event)
                guard case .lockFile = event, action == .abandonKernelWait else { return action }
                return machine.handle(.done)
            }
        case .beginsGrantUnasked:
            return { machine, event in
                let action = machine.handle(event)
                return event == .granted(stillAtPath: true) ? machine.handle(.mayTry(true)) : action
            }
        case .takesOverOnSight:
            return { machine, event in
                let action = machine.handle(event)
                guard case .holderObserved(let seen) = event, case .sleep = action else { return action }
                return .takeOver(seen, silentNanos: 0, pursued: false)
            }
        case .neverUnblocks:
            return { machine, event in
                let action = machine.handle(event)
                return action == .report(nil) ? machine.handle(.done) : action
            }
        }
    }
}
