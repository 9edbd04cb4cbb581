import BatonStore
import Testing

@testable import BatonCoordinator

typealias Acquire = AcquireMachine

/// Two lock files (generations of `D/writer.lock`), and when the test machines start.
let lockFile1 = FileIdentity(device: 1, inode: 10)
let lockFile2 = FileIdentity(device: 1, inode: 20)
let ms: UInt64 = 1_000_000
let acquireStart: UInt64 = 10_000 * ms

extension AcquireMachine {
    /// A machine started at `acquireStart`: term 2 s (a quarter: 500 ms), first look after 20 ms,
    /// holding back for 100 ms at a time.
    /// The frozen-holder policy is `wait` unless given.
    static func make(
        deadline: ContinuousClock.Instant? = nil, term: Duration = .seconds(2),
        frozenHolder: FrozenHolder = FrozenHolder(policy: .wait)
    ) -> Acquire {
        Acquire(
            now: acquireStart, term: term, firstLook: .milliseconds(20), interval: .milliseconds(100),
            deadline: deadline, frozenHolder: frozenHolder)
    }

    /// Feeds each event in order and expects the action that answers it.
    mutating func expect(
        _ steps: KeyValuePairs<Event, Action>, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (event, action) in steps {
            let answered = handle(event)
            #expect(answered == action, "after \(event)", sourceLocation: sourceLocation)
        }
    }

    /// Busy on the first probe and the next, waiting in the kernel on `lockFile1`, the first look
    /// not due yet: asleep.
    static func waiting(
        deadline: ContinuousClock.Instant? = nil, frozenHolder: FrozenHolder = FrozenHolder(policy: .wait)
    ) -> Acquire {
        var machine = make(deadline: deadline, frozenHolder: frozenHolder)
        machine.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .watchChanges,
            .done: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile1): .probe(reuseKept: true),
            .probed(.busy(lockFile1)): .startKernelWait,
            .done: .readClock,
        ])
        let sleep = machine.handle(.clock(acquireStart + 2 * ms))
        if deadline == nil { #expect(sleep == .sleep(.milliseconds(18))) }
        return machine
    }

    /// From a sleep while waiting: a round whose kernel wait on `lockFile1` goes on, at `now`
    /// (the first look due): the holder is to be observed.
    mutating func nextLook(
        at now: UInt64 = acquireStart + 30 * ms, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        expect(
            [
                .woke: .beginRound, .mayTry(true): .takeGrant, .notGranted: .lookAtLockFile,
                .lockFile(lockFile1): .readClock, .clock(now): .observeHolder(lockFile1),
            ], sourceLocation: sourceLocation)
    }

    /// From a sleep while waiting: the holder, silent since 1.5 s before the start, is seen at
    /// 30 ms, then again once its term is up. Returns what the waiter sees then (the machine
    /// waits for it).
    mutating func lookUntilSilent(sourceLocation: SourceLocation = #_sourceLocation)
        -> TakeoverWatch.Observation
    {
        nextLook(sourceLocation: sourceLocation)
        expect([.holderObserved(frozen(at: acquireStart + 30 * ms)): .sleep(.milliseconds(470))])
        nextLook(at: acquireStart + 500 * ms, sourceLocation: sourceLocation)
        return frozen(at: acquireStart + 500 * ms)
    }
}

/// A holder that last beat 1.5 s before `acquireStart`, seen at `now`.
func frozen(at now: UInt64) -> TakeoverWatch.Observation {
    holderSeen(beat: acquireStart - 1_500 * ms, at: now)
}

/// What the waiter sees of a holder that last beat at `beat`.
func holderSeen(
    beat: UInt64, at now: UInt64, state: ProcessState = .running, generation: FileIdentity? = lockFile1
) -> TakeoverWatch.Observation {
    let record = HeartbeatRecord(pid: 42, epoch: 7, beat: beat, termMillis: 2000)
    return TakeoverWatch.Observation(
        generation: generation, record: record, content: record.line, holderState: state, now: now)
}

let heldUp = WriterLease.Blocked(
    name: "host", pid: 42, holderState: .stopped,
    message: "host (pid 42) is stopped inside a write transaction; resume it (kill -CONT 42) or kill it")

@Suite("Acquire machine: taking the lease, event by event (no I/O)")
struct AcquireMachineTests {
    @Test("a free lock is taken at once, with nothing set up: no watch, no kernel wait, no clock")
    func freeAtOnce() {
        var machine = Acquire.make()
        #expect(machine.asked == .askMayTry)
        #expect(machine.phase == .probing)
        machine.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.locked(stillAtPath: true)): .begin,
            .began: .finish(.held),
        ])
        #expect(machine.phase == .finished(.held))
    }

    @Test("a lock on a replaced lock file is let go, and the file named now is tried")
    func freeButReplaced() {
        var machine = Acquire.make()
        machine.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.locked(stillAtPath: false)): .unlock,
            .done: .watchChanges,
            .done: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile2): .probe(reuseKept: false),
            .probed(.locked(stillAtPath: true)): .begin,
            .began: .finish(.held),
        ])
    }

    @Test("held: waits in the kernel on the descriptor probed, and begins once granted and still allowed")
    func grantedByTheKernel() {
        var machine = Acquire.make()
        machine.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .watchChanges,
            .done: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile1): .probe(reuseKept: true),
            .probed(.busy(lockFile1)): .startKernelWait,
            .done: .readClock,
            // The first look is 20 ms after the start: until then it only sleeps.
            .clock(acquireStart + 2 * ms): .sleep(.milliseconds(18)),
        ])
        #expect(machine.phase == .waiting)
        #expect(machine.kernelWait == Acquire.Descriptor(identity: lockFile1))
        #expect(machine.kept == nil)
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            // Still the same file: the wait goes on, no probe.
            .lockFile(lockFile1): .readClock,
            .clock(acquireStart + 25 * ms): .observeHolder(lockFile1),
            // A holder beating 100 ms ago: look again in a quarter of its term.
            .holderObserved(holderSeen(beat: acquireStart - 75 * ms, at: acquireStart + 25 * ms)):
                .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .granted(stillAtPath: true): .askMayTry,
            .mayTry(true): .begin,
            .began: .finish(.held),
        ])
    }

    @Test("a grant on a replaced file, or one priority no longer allows, is handed straight back")
    func grantHandedBack() {
        var machine = Acquire.waiting()
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            // No sleep after either: the next round begins at once.
            .granted(stillAtPath: false): .unlock,
            .done: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile2): .probe(reuseKept: false),
            .probed(.busy(lockFile2)): .startKernelWait,
            .done: .readClock,
            .clock(acquireStart + 5 * ms): .sleep(.milliseconds(15)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .granted(stillAtPath: true): .askMayTry,
            .mayTry(false): .unlock,
            .done: .beginRound,
            .mayTry(false): .sleep(.milliseconds(100)),
        ])
        #expect(machine.phase == .holdingBack)
        #expect(machine.kernelWait == nil)
    }

    @Test("a higher priority waiting: nothing is tried until mayTry says yes, then the lock is taken")
    func holdBackThenGo() {
        var machine = Acquire.make()
        machine.expect([
            .mayTry(false): .watchChanges,
            .done: .beginRound,
            .mayTry(false): .sleep(.milliseconds(100)),
        ])
        #expect(machine.phase == .holdingBack)
        machine.expect([
            .woke: .beginRound,
            .mayTry(false): .sleep(.milliseconds(100)),
            .woke: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile1): .probe(reuseKept: false),
            .probed(.locked(stillAtPath: true)): .begin,
            .began: .finish(.held),
        ])
    }

    @Test("holding back gives up the kernel wait, keeps no takeover going, and waits again after")
    func holdBackWhileWaiting() {
        var machine = Acquire.waiting()
        machine.expect([
            .woke: .beginRound,
            .mayTry(false): .abandonKernelWait,
            .done: .sleep(.milliseconds(100)),
        ])
        #expect(machine.phase == .holdingBack)
        #expect(machine.kernelWait == nil)
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile1): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .startKernelWait,
            .done: .readClock,
            .clock(acquireStart + 200 * ms): .observeHolder(lockFile1),
        ])
        #expect(machine.phase == .waiting)
    }

    @Test("the descriptor kept from the first probe is closed when the lock file changed meanwhile")
    func keptOnAReplacedFile() {
        var machine = Acquire.make()
        machine.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .watchChanges,
            .done: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile2): .closeKept,
            .done: .probe(reuseKept: false),
        ])
        #expect(machine.kept == nil)
    }

    @Test("a lock file replaced while waiting: the wait on the old one is given up, the new one waited on")
    func replacedWhileWaiting() {
        var machine = Acquire.waiting()
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile2): .abandonKernelWait,
            .done: .probe(reuseKept: false),
            .probed(.busy(lockFile2)): .startKernelWait,
        ])
        #expect(machine.kernelWait == Acquire.Descriptor(identity: lockFile2))
        // No lock file at all: whoever creates it takes it; the wait starts again.
        machine.expect([
            .done: .readClock,
            .clock(acquireStart + 3 * ms): .sleep(.milliseconds(17)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(nil): .abandonKernelWait,
            .done: .probe(reuseKept: false),
        ])
    }

    @Test("a holder silent for a full term is taken over, on TakeoverWatch's word; the wait is given up")
    func frozenHolderTakenOver() {
        var machine = Acquire.waiting()
        let frozen = machine.lookUntilSilent()
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.taken): .abandonKernelWait,
            .done: .finish(.held),
        ])
    }

    @Test("a holder seen stopped for a quarter term is taken over; one beating again is not")
    func stoppedHolder() {
        var machine = Acquire.waiting()
        machine.nextLook()
        let beat = acquireStart - 100 * ms
        let stopped = holderSeen(beat: beat, at: acquireStart + 30 * ms, state: .stopped)
        machine.expect([.holderObserved(stopped): .sleep(.milliseconds(500))])
        machine.nextLook(at: acquireStart + 530 * ms)
        let stillStopped = holderSeen(beat: beat, at: acquireStart + 530 * ms, state: .stopped)
        #expect(
            machine.handle(.holderObserved(stillStopped))
                == .takeOver(stillStopped, silentNanos: 630 * ms, pursued: false))

        // Thawed: it beats again, and is waited for.
        var thawed = Acquire.waiting()
        thawed.nextLook()
        thawed.expect([.holderObserved(stopped): .sleep(.milliseconds(500))])
        thawed.nextLook(at: acquireStart + 530 * ms)
        let beating = holderSeen(beat: acquireStart + 520 * ms, at: acquireStart + 530 * ms)
        #expect(thawed.handle(.holderObserved(beating)) == .sleep(.milliseconds(500)))
        #expect(thawed.phase == .waiting)
    }

    @Test(
        "a takeover held up by the holder's write transaction is reported once and pursued until it goes through"
    )
    func blockedTakeoverPursued() {
        var machine = Acquire.waiting()
        let frozen = machine.lookUntilSilent()
        let pursued = Acquire.Action.takeOver(frozen, silentNanos: 2_000 * ms, pursued: true)
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
        ])
        #expect(machine.phase == .pursuing)
        // The next round carries the takeover through without asking the watch (or the clock) again.
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): pursued,
            // Held up the same way: not reported again.
            .takeover(.blocked(heldUp)): .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): pursued,
            .takeover(.taken): .abandonKernelWait,
            .done: .report(nil),
            .done: .finish(.held),
        ])
        #expect(machine.reported == nil)
    }

    @Test(
        "thaw or kill: a holder stopped or frozen inside its transaction past the bound is acted on, then the takeover goes through",
        arguments: [FrozenHolder.Policy.thaw, .kill], [ProcessState.stopped, .hung])
    func frozenHolderActedOn(policy: FrozenHolder.Policy, state: ProcessState) {
        // The holder last beat 1.5 s before the wait began: with a 3 s bound, the policy acts
        // 1.5 s after it.
        var machine = Acquire.waiting(frozenHolder: FrozenHolder(policy: policy, bound: .seconds(3)))
        let frozen = machine.lookUntilSilent()
        var blocked = heldUp
        blocked.holderState = state
        let pursued = Acquire.Action.takeOver(frozen, silentNanos: 2_000 * ms, pursued: true)
        let round: KeyValuePairs<Acquire.Event, Acquire.Action> = [
            .woke: .beginRound, .mayTry(true): .takeGrant, .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): pursued,
        ]
        let t0 = acquireStart + 520 * ms
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            // Held up: the block is timed from the holder's last beat, and reported.
            .takeover(.blocked(blocked)): .readClock,
            .clock(t0): .report(blocked),
            .done: .sleep(.milliseconds(500)),
        ])
        machine.expect(round)
        // Within the bound: nothing done, nothing new to report; the next look is when the
        // bound is up (3 s after the beat), not a quarter term later.
        machine.expect([
            .takeover(.blocked(blocked)): .readClock, .clock(t0 + 600 * ms): .sleep(.milliseconds(380)),
        ])
        machine.expect(round)
        // Past it: the policy acts on the holder, and the report says what was done.
        let acted = blocked.acted(on: "done it", policy: policy, after: .seconds(3))
        machine.expect([
            .takeover(.blocked(blocked)): .readClock,
            .clock(t0 + 1_100 * ms): .unfreeze(pid: 42, policy: policy),
            .unfroze("done it"): .report(acted),
            .done: .sleep(.milliseconds(500)),
        ])
        #expect(acted.message.contains("policy \(policy.rawValue): done it"))
        machine.expect(round)
        // Not again until another bound has passed.
        machine.expect([.takeover(.blocked(blocked)): .readClock, .clock(t0 + 1_700 * ms): .report(blocked)])
        machine.expect([.done: .sleep(.milliseconds(500))])
        machine.expect(round)
        machine.expect([
            .takeover(.taken): .abandonKernelWait,
            .done: .report(nil),
            .done: .finish(.held),
        ])
    }

    @Test("a holder silent for longer than the bound already is acted on at the first block")
    func frozenLongAgo() {
        // Last beat 1.5 s before the wait began, so 2 s silent at the first block: past a 1 s
        // bound, the policy acts at once.
        var machine = Acquire.waiting(frozenHolder: FrozenHolder(policy: .thaw, bound: .seconds(1)))
        let frozen = machine.lookUntilSilent()
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .readClock,
            .clock(acquireStart + 520 * ms): .unfreeze(pid: 42, policy: .thaw),
            .unfroze("resumed it"): .report(
                heldUp.acted(on: "resumed it", policy: .thaw, after: .seconds(1))),
            .done: .sleep(.milliseconds(500)),
        ])
    }

    @Test(
        "the policy never acts on a holder the kernel shows running, nor when the kernel names no such holder"
    )
    func frozenHolderNotActedOn() {
        var machine = Acquire.waiting(frozenHolder: FrozenHolder(policy: .kill, bound: .zero))
        let frozen = machine.lookUntilSilent()
        var running = heldUp
        running.holderState = .running
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(running)): .readClock,
            .clock(acquireStart + 600 * ms): .report(running),
            .done: .sleep(.milliseconds(500)),
        ])
        var other = Acquire.waiting(frozenHolder: FrozenHolder(policy: .thaw, bound: .zero))
        let seen = other.lookUntilSilent()
        other.expect([
            .holderObserved(seen): .takeOver(seen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .readClock,
            .clock(acquireStart + 600 * ms): .unfreeze(pid: 42, policy: .thaw),
            // The kernel did not name pid 42 as a holder of the lock file: nothing was done.
            .unfroze(nil): .report(heldUp),
        ])
    }

    @Test("a block that changes is reported again; holding back keeps the pursuit for later")
    func blockChangesAndHoldingBack() {
        var machine = Acquire.waiting()
        let frozen = machine.lookUntilSilent()
        var thawed = heldUp
        thawed.holderState = .running
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(false): .abandonKernelWait,
            .done: .sleep(.milliseconds(100)),
        ])
        #expect(machine.phase == .holdingBack)
        #expect(machine.pursuit != nil)
        machine.expect([
            .woke: .beginRound,
            .mayTry(true): .lookAtLockFile,
            .lockFile(lockFile1): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .startKernelWait,
            .done: .takeOver(frozen, silentNanos: 2_000 * ms, pursued: true),
            .takeover(.blocked(thawed)): .report(thawed),
        ])
    }

    @Test(
        "the holder alive again: the lease moved, or a new lock file, ends the pursuit and the wait goes on")
    func backToWaiting() {
        var machine = Acquire.waiting()
        let frozen = machine.lookUntilSilent()
        machine.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: true),
            // It thawed and let go meanwhile: look again shortly.
            .takeover(.moved): .sleep(.milliseconds(20)),
        ])
        #expect(machine.phase == .waiting)
        #expect(machine.reported == heldUp)
        machine.nextLook(at: acquireStart + 600 * ms)
        let beating = holderSeen(beat: acquireStart + 590 * ms, at: acquireStart + 600 * ms)
        machine.expect([.holderObserved(beating): .sleep(.milliseconds(500))])

        // Pursuing when the lock file is replaced (someone else took over): the new file is
        // waited on, and its holder observed afresh.
        var other = Acquire.waiting()
        _ = other.lookUntilSilent()
        other.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile2): .abandonKernelWait,
            .done: .probe(reuseKept: false),
            .probed(.busy(lockFile2)): .startKernelWait,
            .done: .observeHolder(lockFile2),
        ])
        #expect(other.pursuit == nil)
        #expect(other.phase == .waiting)
    }

    @Test("cancelled: the kernel wait is given up, a block reported is said to be over, then it ends")
    func cancelled() {
        var machine = Acquire.waiting()
        machine.expect([
            .woke: .beginRound,
            .cancelled: .abandonKernelWait,
            .done: .finish(.cancelled),
        ])
        #expect(machine.phase == .finished(.cancelled))
        #expect(machine.kernelWait == nil)

        var kept = Acquire.make()
        kept.expect([
            .mayTry(true): .probe(reuseKept: false),
            .probed(.busy(lockFile1)): .watchChanges,
            .done: .beginRound,
            .cancelled: .closeKept,
            .done: .finish(.cancelled),
        ])

        var blocked = Acquire.waiting()
        let frozen = blocked.lookUntilSilent()
        blocked.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .cancelled: .abandonKernelWait,
            .done: .report(nil),
            .done: .finish(.cancelled),
        ])

        var holdingBack = Acquire.make()
        holdingBack.expect([
            .mayTry(false): .watchChanges,
            .done: .beginRound,
            .mayTry(false): .sleep(.milliseconds(100)),
            .woke: .beginRound,
            .cancelled: .finish(.cancelled),
        ])
    }

    @Test("the deadline: sleeps never past it, and a round that ends past it times out")
    func deadline() {
        let base = ContinuousClock.now
        let deadline = base + .milliseconds(300)
        var machine = Acquire.waiting(deadline: deadline)
        #expect(machine.asked == .readDeadlineClock)
        machine.expect([.deadlineClock(base + .milliseconds(290)): .sleep(.milliseconds(10))])
        machine.nextLook()
        machine.expect([
            .holderObserved(holderSeen(beat: acquireStart, at: acquireStart + 30 * ms)): .readDeadlineClock,
            // Never less than a millisecond.
            .deadlineClock(base + .microseconds(299_900)): .sleep(.milliseconds(1)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): .readClock,
            .clock(acquireStart + 40 * ms): .observeHolder(lockFile1),
            .holderObserved(holderSeen(beat: acquireStart, at: acquireStart + 40 * ms)): .readDeadlineClock,
            .deadlineClock(deadline): .abandonKernelWait,
            .done: .finish(.timedOut),
        ])

        // A lock granted past the deadline is still taken: the deadline ends rounds, not grants.
        var late = Acquire.waiting(deadline: deadline)
        late.expect([
            .deadlineClock(base + .milliseconds(10)): .sleep(.milliseconds(18)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .granted(stillAtPath: true): .askMayTry,
            .mayTry(true): .begin,
            .began: .finish(.held),
        ])

        // Holding back past the deadline times out too.
        var holdingBack = Acquire.make(deadline: deadline)
        holdingBack.expect([
            .mayTry(false): .watchChanges,
            .done: .beginRound,
            .mayTry(false): .readDeadlineClock,
            .deadlineClock(base + .milliseconds(250)): .sleep(.milliseconds(50)),
            .woke: .beginRound,
            .mayTry(false): .readDeadlineClock,
            .deadlineClock(base + .milliseconds(301)): .finish(.timedOut),
        ])
    }

    @Test("the first look waits 20 ms, or a quarter term when that is shorter")
    func firstLook() {
        #expect(Acquire.make().firstLook == acquireStart + 20 * ms)
        #expect(Acquire.make(term: .milliseconds(40)).firstLook == acquireStart + 10 * ms)
    }

    @Test("an action that threw ends it, after the same clean-up; a failed kernel wait is not given up again")
    func failures() {
        var probe = Acquire.make()
        probe.expect([.mayTry(true): .probe(reuseKept: false), .failed: .finish(.failed)])

        var grant = Acquire.waiting()
        grant.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .failed: .finish(.failed),
        ])

        var takeover = Acquire.waiting()
        let frozen = takeover.lookUntilSilent()
        takeover.expect([
            .holderObserved(frozen): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: false),
            .takeover(.blocked(heldUp)): .report(heldUp),
            .done: .sleep(.milliseconds(500)),
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .notGranted: .lookAtLockFile,
            .lockFile(lockFile1): .takeOver(frozen, silentNanos: 2_000 * ms, pursued: true),
            .failed: .abandonKernelWait,
            .done: .report(nil),
            .done: .finish(.failed),
        ])

        var begin = Acquire.waiting()
        begin.expect([
            .woke: .beginRound,
            .mayTry(true): .takeGrant,
            .granted(stillAtPath: true): .askMayTry,
            .mayTry(true): .begin,
            .failed: .finish(.failed),
        ])
    }

    @Test("an event that answers nothing asked changes nothing; once finished, it stays finished")
    func outOfTurn() {
        var machine = Acquire.make()
        machine.expect([
            .woke: .askMayTry,
            .done: .askMayTry,
            .granted(stillAtPath: true): .askMayTry,
            .mayTry(true): .probe(reuseKept: false),
            .mayTry(true): .probe(reuseKept: false),
            .takeover(.taken): .probe(reuseKept: false),
            .probed(.locked(stillAtPath: true)): .begin,
            .done: .begin,
            .began: .finish(.held),
            .done: .finish(.held),
            .failed: .finish(.held),
            .cancelled: .finish(.held),
        ])
        #expect(machine.phase == .finished(.held))
    }
}
