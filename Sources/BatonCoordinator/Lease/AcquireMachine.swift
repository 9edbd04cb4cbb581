import BatonStore

/// Taking the writer lease as one pure state machine: `WriterLease.acquire` carries out each
/// action it answers and feeds back what came of it as the next event. It does no I/O and reads
/// no clock: times come in as values (`CLOCK_MONOTONIC` nanoseconds, as heartbeats count them;
/// the deadline's `ContinuousClock`).
///
/// It starts by asking `mayTry` (``asked``). Every action is answered by exactly one event
/// (``Event/done`` for those that only do something; ``Event/failed`` for any that threw), so the
/// machine always knows what it asked. An event that answers nothing asked changes nothing, and
/// the question stands; once finished, every event answers the finish again.
///
/// The way through, as ``phase`` names it:
/// - **probing**: asks `mayTry`, then tries the lock without blocking. A free lock is taken at once,
///   with nothing set up (a turn of the lease stays cheap); a busy one's descriptor is kept to
///   wait on, and the machine starts watching for changes (inotify: participants' states, a new
///   lock file). Each round then begins by noting the changes seen, asking `mayTry`, and, unless
///   the kernel wait is on the file `D/writer.lock` names, tries again: on the kept descriptor
///   when it is still that file, on a fresh one otherwise.
/// - **waiting**: a `flock` blocks in the kernel on a thread of its own. Each round takes its
///   grant when there is one (begun only if the file is still in place and `mayTry` still says
///   yes); otherwise, once the wait has lasted `firstLook`, it looks at the holder and asks
///   ``TakeoverWatch`` whether it has been silent for a term.
/// - **pursuing**: a takeover decided and held up by a holder frozen inside a write transaction
///   (reported once through `onBlocked`) is tried again every quarter term without asking the
///   watch again, even if the thawed holder beats meanwhile, until the lock file changes.
/// - **holdingBack**: `mayTry` said no (a participant of higher priority waits): the kernel wait
///   is given up, nothing is tried or taken over, and the round ends after `interval`.
///
/// A round ends by checking the deadline and sleeping until a change, the time it asked for, or
/// cancellation, whichever comes first. However it finishes (held, cancelled, timed out, or an
/// action that threw), it first closes the kept descriptor, gives up the kernel wait and tells
/// `onBlocked` nil if it had reported a block.
package struct AcquireMachine: Sendable {
    /// Where the acquisition is.
    package enum Phase: Sendable, Hashable {
        /// Trying the lock without blocking (no kernel wait under way).
        case probing
        /// Waiting for the lock in the kernel, looking at the holder now and then.
        case waiting
        /// Carrying through a takeover held up by the holder's open write transaction.
        case pursuing
        /// Holding back for a participant of higher priority.
        case holdingBack
        /// Done.
        case finished(Ending)
    }

    /// How an acquisition ends.
    package enum Ending: Sendable, Hashable {
        /// The lease is held (begun on a lock granted, or taken over).
        case held
        /// The task was cancelled (`CancellationError`).
        case cancelled
        /// The deadline passed (`leaseTimeout`).
        case timedOut
        /// An action threw; the interpreter rethrows its error.
        case failed
    }

    /// What trying the lock without blocking found.
    package enum Probe: Sendable, Hashable {
        /// Locked; `stillAtPath` says whether `D/writer.lock` still names the file locked.
        case locked(stillAtPath: Bool)
        /// Somebody holds it: the descriptor (on the file `identity` names) is kept.
        case busy(FileIdentity?)
    }

    /// What came of a takeover.
    package enum TakeoverResult: Sendable, Hashable {
        /// Taken over: the lease is held.
        case taken
        /// The lease moved meanwhile (released, or taken by someone else).
        case moved
        /// Held up: the silent holder keeps SQLite's write lock.
        case blocked(WriterLease.Blocked)
    }

    /// What the interpreter tells the machine: the start, then the answer to each action.
    package enum Event: Sendable, Hashable {
        /// `mayTry`'s answer (to ``Action/askMayTry`` and ``Action/beginRound``).
        case mayTry(Bool)
        /// The task is cancelled (to ``Action/beginRound``).
        case cancelled
        /// To ``Action/probe(reuseKept:)``.
        case probed(Probe)
        /// To ``Action/takeGrant``: the kernel wait goes on.
        case notGranted
        /// To ``Action/takeGrant``: the kernel granted the lock (now in hand).
        case granted(stillAtPath: Bool)
        /// To ``Action/lookAtLockFile``: the file `D/writer.lock` names (nil: none).
        case lockFile(FileIdentity?)
        /// To ``Action/readClock``: `CLOCK_MONOTONIC` nanoseconds.
        case clock(UInt64)
        /// To ``Action/readDeadlineClock``.
        case deadlineClock(ContinuousClock.Instant)
        /// To ``Action/observeHolder(_:)``.
        case holderObserved(TakeoverWatch.Observation)
        /// To ``Action/takeOver(_:silentNanos:pursued:)``.
        case takeover(TakeoverResult)
        /// To ``Action/unfreeze(pid:policy:)``: what was done, as a phrase (nil: nothing, the
        /// kernel named no such holder).
        case unfroze(String?)
        /// To ``Action/begin``: the holding has begun.
        case began
        /// To ``Action/sleep(_:)``.
        case woke
        /// To any action that only does something.
        case done
        /// The action asked threw (its error is the interpreter's to rethrow).
        case failed
    }

    /// What the machine asks the interpreter to do; each is answered by one ``Event``.
    package enum Action: Sendable, Hashable {
        /// Ask `mayTry` (``Event/mayTry(_:)``).
        case askMayTry
        /// Try the lock without blocking, on the kept descriptor or on a fresh one of
        /// `D/writer.lock` (``Event/probed(_:)``); a busy one's descriptor is kept.
        case probe(reuseKept: Bool)
        /// Start watching for changes (inotify), once.
        case watchChanges
        /// Check for cancellation, note the changes seen so far, ask `mayTry`.
        case beginRound
        /// Take the kernel wait's grant, if there is one (``Event/notGranted``,
        /// ``Event/granted(stillAtPath:)``).
        case takeGrant
        /// See which file `D/writer.lock` names (``Event/lockFile(_:)``).
        case lookAtLockFile
        /// Close the kept descriptor.
        case closeKept
        /// Start waiting in the kernel on the kept descriptor (it is the wait's from now on).
        case startKernelWait
        /// Give up the kernel wait (a lock granted to it is released at once).
        case abandonKernelWait
        /// Read the monotonic clock (``Event/clock(_:)``).
        case readClock
        /// Read the deadline's clock (``Event/deadlineClock(_:)``).
        case readDeadlineClock
        /// Read the holder's heartbeat record and process state (``Event/holderObserved(_:)``).
        case observeHolder(FileIdentity?)
        /// Take the lease over from the holder seen (``Event/takeover(_:)``).
        case takeOver(TakeoverWatch.Observation, silentNanos: UInt64, pursued: Bool)
        /// Tell `onBlocked` (nil: the block is over).
        case report(WriterLease.Blocked?)
        /// Carry out the frozen-holder policy on `pid`, a holder of `D/writer.lock` stopped or
        /// frozen inside a write transaction (``Event/unfroze(_:)``).
        case unfreeze(pid: Int32, policy: FrozenHolder.Policy)
        /// Start the holding on the lock in hand (``Event/began``).
        case begin
        /// Release the lock in hand.
        case unlock
        /// Wait for a change, this long at most, or cancellation (``Event/woke``).
        case sleep(Duration)
        /// Return the holding, or throw.
        case finish(Ending)
    }

    /// A descriptor of the lock file, on the file `identity` names.
    package struct Descriptor: Sendable, Hashable {
        package var identity: FileIdentity?
    }

    /// A takeover decided and held up: what was seen, and the silence it counted.
    package struct Pursuit: Sendable, Hashable {
        package var observation: TakeoverWatch.Observation
        package var silentNanos: UInt64
    }

    /// Which answer the machine waits for.
    enum Step: Sendable, Hashable {
        case firstMayTry, firstProbe, unlockedFirst, watching
        case round, holdingBack, takingGrant, confirming, unlocked
        case lookingAtLockFile, preparingProbe, probing, startingWait
        case readingClock, observing, takingOver(Pursuit), reporting
        case timingBlock(WriterLease.Blocked), unfreezing(WriterLease.Blocked)
        case readingDeadline, sleeping, beginning
        case ending(Ending), finished(Ending)
    }

    /// After a takeover found the lease moved: look again shortly (a new beat is coming).
    package static let afterMove: Duration = .milliseconds(20)
    /// The shortest sleep.
    package static let shortestSleep: Duration = .milliseconds(1)

    /// The waiter's own lease term: its quarter paces a pursued takeover.
    package let term: Duration
    /// How long the wait goes before it first looks at the holder.
    package let firstLookDelay: Duration
    /// While holding back, the longest a round sleeps.
    package let interval: Duration
    /// When to give up (nil: never).
    package let deadline: ContinuousClock.Instant?
    /// What to do about a holder frozen inside a write transaction.
    package let frozenHolder: FrozenHolder

    private(set) var step: Step = .firstMayTry
    /// The action asked last (first: `mayTry`): the question an event out of turn leaves standing.
    package private(set) var asked: Action = .askMayTry
    /// When the first look at the holder is due (monotonic nanoseconds).
    package let firstLook: UInt64
    /// The descriptor kept from a busy probe, not waited on yet.
    package private(set) var kept: Descriptor?
    /// The descriptor the kernel wait is on, while one is under way.
    package private(set) var kernelWait: Descriptor?
    /// The file `D/writer.lock` named when this round looked.
    package private(set) var lockFile: FileIdentity?
    /// The takeover held up and carried through each round (until the lock file changes).
    package private(set) var pursuit: Pursuit?
    /// The block last told to `onBlocked` (nil: none, or over).
    package private(set) var reported: WriterLease.Blocked?
    /// The last round's `mayTry` said no.
    package private(set) var holdingBack = false
    /// Since when the holder that holds up the takeover with its write transaction counts as
    /// frozen: its last sign of life as the watch saw it when the takeover was decided
    /// (monotonic ns).
    package private(set) var blockedSince: UInt64?
    /// When the frozen-holder policy last acted (monotonic ns).
    package private(set) var lastUnfreeze: UInt64?
    /// How long this round sleeps at most.
    private var wait: Duration = .zero
    private var watch: TakeoverWatch

    /// Makes a machine that has done nothing yet: its first action is ``asked``.
    ///
    /// - Parameters:
    ///   - now: when the acquisition begins (`CLOCK_MONOTONIC` nanoseconds).
    ///   - term: the waiter's lease term (also the watch's term when a record gives none).
    ///   - firstLook: how long the wait goes before it first looks at the holder (a quarter term
    ///     when that is shorter).
    ///   - interval: while holding back, the longest a round sleeps.
    ///   - deadline: when to give up; nil waits forever.
    ///   - frozenHolder: what to do about a holder frozen inside a write transaction.
    package init(
        now: UInt64, term: Duration, firstLook: Duration, interval: Duration,
        deadline: ContinuousClock.Instant? = nil, frozenHolder: FrozenHolder = .standard
    ) {
        self.frozenHolder = frozenHolder
        self.term = term
        self.firstLookDelay = min(firstLook, term / 4)
        self.firstLook = now &+ UInt64(max(0, firstLookDelay.inNanoseconds))
        self.interval = interval
        self.deadline = deadline
        self.watch = TakeoverWatch(defaultTerm: term)
    }

    /// Where the acquisition is now.
    package var phase: Phase {
        if case .finished(let ending) = step { return .finished(ending) }
        if holdingBack { return .holdingBack }
        if pursuit != nil { return .pursuing }
        if kernelWait != nil { return .waiting }
        return .probing
    }

    /// Takes in `event` and answers what to do next.
    package mutating func handle(_ event: Event) -> Action {
        // Out of turn, the question stands.
        guard let next = answer(event) else { return asked }
        asked = next
        return next
    }

    private mutating func answer(_ event: Event) -> Action? {
        switch (step, event) {
        case (.ending(let ending), .done):
            return cleanUp(ending)
        case (.ending, _), (.finished, _):
            return nil
        case (.firstMayTry, .mayTry(true)):
            return ask(.probe(reuseKept: false), then: .firstProbe)
        case (.firstMayTry, .mayTry(false)), (.unlockedFirst, .done):
            return ask(.watchChanges, then: .watching)
        case (.firstProbe, .probed(let probe)):
            return probed(probe, first: true)
        case (.probing, .probed(let probe)):
            return probed(probe, first: false)
        case (.watching, .done), (.unlocked, .done), (.sleeping, .woke):
            return ask(.beginRound, then: .round)
        case (.round, .cancelled):
            return end(.cancelled)
        case (.round, .mayTry(let may)):
            return round(mayTry: may)
        case (.holdingBack, .done), (.reporting, .done):
            return settle()
        case (.takingGrant, _), (.confirming, _):
            return granting(event)
        case (.lookingAtLockFile, .lockFile(let generation)):
            lockFile = generation
            // The kernel wait goes on while it is on the file the path names.
            if let kernelWait, generation != nil, kernelWait.identity == generation { return look() }
            return prepareProbe()
        case (.preparingProbe, .done):
            return prepareProbe()
        case (.startingWait, .done):
            return look()
        case (.readingClock, .clock(let now)):
            // Most contended waits end before the first look: they never read the holder's record.
            guard now >= firstLook else { return settle(sleeping: .nanoseconds(Int64(firstLook - now))) }
            return lookAtHolder()
        case (.observing, .holderObserved(let observation)):
            return decide(observation)
        case (.takingOver(let pursuit), .takeover(let result)):
            return tookOver(result, pursuit)
        case (.timingBlock(let reason), .clock(let now)):
            return timedBlock(reason, now: now)
        case (.unfreezing(let reason), .unfroze(let done)):
            guard let done else { return report(reason) }
            return report(reason.acted(on: done, policy: frozenHolder.policy, after: frozenHolder.bound))
        case (.readingDeadline, .deadlineClock(let now)):
            guard let deadline, now < deadline else { return end(.timedOut) }
            return sleep(min(wait, deadline - now))
        case (.beginning, .began):
            return end(.held)
        case (_, .failed):
            return end(.failed)
        default:
            return nil
        }
    }

    private mutating func ask(_ action: Action, then next: Step) -> Action {
        step = next
        return action
    }

    private mutating func probed(_ probe: Probe, first: Bool) -> Action {
        switch probe {
        case .locked(stillAtPath: true):
            return ask(.begin, then: .beginning)
        case .locked(stillAtPath: false):
            // A lock on a writer.lock deleted or replaced meanwhile guards nothing: the next taker
            // would open the new file.
            return ask(.unlock, then: first ? .unlockedFirst : .unlocked)
        case .busy(let identity):
            kept = Descriptor(identity: identity)
            // The first probe watches for changes first, then looks again, so a change made in
            // between is not missed; later ones wait in the kernel on the same descriptor.
            guard first else { return startKernelWait() }
            return ask(.watchChanges, then: .watching)
        }
    }

    private mutating func round(mayTry: Bool) -> Action {
        holdingBack = !mayTry
        guard mayTry else {
            // Holding back for a higher priority: no kernel wait, and no takeover either.
            wait = interval
            guard kernelWait == nil else { return giveUpKernelWait(then: .holdingBack) }
            return settle()
        }
        if kernelWait != nil { return ask(.takeGrant, then: .takingGrant) }
        return ask(.lookAtLockFile, then: .lookingAtLockFile)
    }

    /// The answers to ``Action/takeGrant``, and to asking `mayTry` again once granted.
    private mutating func granting(_ event: Event) -> Action? {
        switch (step, event) {
        case (.takingGrant, .notGranted):
            return ask(.lookAtLockFile, then: .lookingAtLockFile)
        case (.takingGrant, .granted(let stillAtPath)):
            kernelWait = nil
            // Priority is asked again once the lock is granted: a lower one hands it straight back.
            return ask(stillAtPath ? .askMayTry : .unlock, then: stillAtPath ? .confirming : .unlocked)
        case (.takingGrant, .failed):
            // The wait ended, with an error.
            kernelWait = nil
            return end(.failed)
        case (.confirming, .mayTry(let may)):
            return ask(may ? .begin : .unlock, then: may ? .beginning : .unlocked)
        default:
            return event == .failed ? end(.failed) : nil
        }
    }

    /// Before trying the lock again: the kernel wait on another file is given up, and the kept
    /// descriptor is closed unless it is on the file the path names.
    private mutating func prepareProbe() -> Action {
        if kernelWait != nil { return giveUpKernelWait(then: .preparingProbe) }
        if let kept, kept.identity != lockFile {
            self.kept = nil
            return ask(.closeKept, then: .preparingProbe)
        }
        let reuse = kept != nil
        kept = nil
        return ask(.probe(reuseKept: reuse), then: .probing)
    }

    private mutating func giveUpKernelWait(then next: Step) -> Action {
        kernelWait = nil
        return ask(.abandonKernelWait, then: next)
    }

    private mutating func startKernelWait() -> Action {
        kernelWait = kept
        kept = nil
        return ask(.startKernelWait, then: .startingWait)
    }

    /// With the kernel wait in place: the first look at the holder waits for `firstLook`, a
    /// pursued takeover does not.
    private mutating func look() -> Action {
        if pursuit == nil { return ask(.readClock, then: .readingClock) }
        return lookAtHolder()
    }

    private mutating func lookAtHolder() -> Action {
        // A takeover held up by a holder frozen inside a write transaction is carried through
        // once it can be, even if the thawed holder beats again meanwhile: it was silent for a
        // term, and its next write fails its fence. A new lock file ends the pursuit.
        if let pursuit, pursuit.observation.generation != lockFile {
            self.pursuit = nil
            (blockedSince, lastUnfreeze) = (nil, nil)
        }
        guard let pursuit else { return ask(.observeHolder(lockFile), then: .observing) }
        self.pursuit = nil
        return ask(
            .takeOver(pursuit.observation, silentNanos: pursuit.silentNanos, pursued: true),
            then: .takingOver(pursuit))
    }

    private mutating func decide(_ observation: TakeoverWatch.Observation) -> Action {
        switch watch.observe(observation) {
        case .wait(let until):
            return settle(sleeping: .nanoseconds(Int64(until &- min(until, observation.now))))
        case .takeOver(let silent):
            return ask(
                .takeOver(observation, silentNanos: silent, pursued: false),
                then: .takingOver(Pursuit(observation: observation, silentNanos: silent)))
        }
    }

    private mutating func tookOver(_ result: TakeoverResult, _ decided: Pursuit) -> Action {
        switch result {
        case .taken:
            return end(.held)
        case .moved:
            (blockedSince, lastUnfreeze) = (nil, nil)
            return settle(sleeping: Self.afterMove)
        case .blocked(let reason):
            pursuit = decided
            wait = term / 4
            guard frozenHolder.policy == .wait else { return ask(.readClock, then: .timingBlock(reason)) }
            return report(reason)
        }
    }

    /// A takeover held up by a holder stopped or frozen inside its write transaction for the
    /// policy's bound (since its last sign of life, or since the policy last acted): the policy
    /// acts. A holder frozen for long already is acted on at the first block: a peer writes
    /// within the bound (or the lease term, if longer) of the freeze, plus a round.
    private mutating func timedBlock(_ reason: WriterLease.Blocked, now: UInt64) -> Action {
        let since =
            blockedSince ?? pursuit.map { $0.observation.now &- min($0.silentNanos, $0.observation.now) }
            ?? now
        blockedSince = since
        let frozen = reason.holderState == .stopped || reason.holderState == .hung
        let bound = UInt64(max(0, frozenHolder.bound.inNanoseconds))
        let elapsed = now &- min(lastUnfreeze ?? since, now)
        guard frozen, reason.pid > 0 else { return report(reason) }
        guard elapsed >= bound else {
            // Look again when the bound is up, not a quarter term later.
            wait = min(wait, .nanoseconds(Int64(bound - elapsed)))
            return report(reason)
        }
        lastUnfreeze = now
        return ask(.unfreeze(pid: reason.pid, policy: frozenHolder.policy), then: .unfreezing(reason))
    }

    /// Tells `onBlocked` of a block not told yet; then the round ends.
    private mutating func report(_ reason: WriterLease.Blocked) -> Action {
        guard reported != reason else { return settle() }
        reported = reason
        return ask(.report(reason), then: .reporting)
    }

    /// Ends the round: past the deadline the acquisition ends, otherwise it sleeps.
    private mutating func settle(sleeping duration: Duration? = nil) -> Action {
        if let duration { wait = duration }
        guard deadline != nil else { return sleep(wait) }
        return ask(.readDeadlineClock, then: .readingDeadline)
    }

    private mutating func sleep(_ duration: Duration) -> Action {
        ask(.sleep(max(duration, Self.shortestSleep)), then: .sleeping)
    }

    /// Finishes once the kept descriptor is closed, the kernel wait given up and a block
    /// reported is said to be over.
    private mutating func end(_ ending: Ending) -> Action {
        step = .ending(ending)
        return cleanUp(ending)
    }

    private mutating func cleanUp(_ ending: Ending) -> Action {
        if kept != nil {
            kept = nil
            return .closeKept
        }
        if kernelWait != nil {
            kernelWait = nil
            return .abandonKernelWait
        }
        if reported != nil {
            reported = nil
            return .report(nil)
        }
        return ask(.finish(ending), then: .finished(ending))
    }
}
