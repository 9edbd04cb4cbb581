import BatonCoordinator
import BatonSync

extension Simulation {
    // MARK: - The writer's work

    func scheduleWriter(_ participant: SimulatedParticipant, _ step: WriterStep, after delay: UInt64) {
        guard let writer = participant.writer else { return }
        schedule(
            .writer(participant.index, incarnation: participant.incarnation, term: writer.term, step),
            after: delay)
    }

    /// SQLite's busy timeout: a write waits this long for a lock held elsewhere, then fails.
    static let busyTimeout: UInt64 = 10_000_000_000

    func writerStep(_ participant: SimulatedParticipant, term: Int, _ step: WriterStep) {
        // Each branch stores what it changed before it feeds the machine, which may change the
        // writer in turn (a stop, its write access dropped).
        guard var writer = participant.writer, writer.term == term else { return }
        switch step {
        case .start:
            // The holding's first write: it records the epoch, fenced against the store's.
            if let writing = kernel.writeLock, writing != participant.index {
                let since = writer.busySince ?? now
                writer.busySince = since
                participant.writer = writer
                guard now - since < Self.busyTimeout else {
                    participant.writer?.busySince = nil
                    feed(participant, [.writerStartFailed("database is locked")])
                    return
                }
                scheduleWriter(participant, .start, after: 5_000_000)
                return
            }
            writer.busySince = nil
            let lease = writer.lease
            if now < diskFullUntil {
                participant.writer = writer
                feed(participant, [.writerStartFailed("database or disk is full")])
                return
            }
            // `LeaseFence`: the store's epoch as the holding expects, and its lock still the
            // file in place (asked inside the transaction).
            let current =
                (lease.takenOver ? kernel.storeEpoch == lease.epoch : kernel.storeEpoch < lease.epoch)
                && kernel.pathGeneration == lease.generation
            guard current || options.mutation == .unfencedStart else {
                participant.writer = writer
                staleStarts += 1
                participant.deadFences.insert(lease)
                let outcome: Machine.Event =
                    options.mutation == .deadFenceRetried
                    ? .writerStartFailed("stale epoch") : .writerStartStale
                feed(participant, [.managerState(participant.managerState), outcome])
                return
            }
            if !lease.takenOver, kernel.storeEpoch < lease.epoch {
                // The take is timed inside its transaction, once it holds SQLite's write lock.
                let acquired = options.mutation == .takeDatedBeforeWait ? writer.since : now
                record(epoch: lease.epoch, by: participant, at: acquired)
            }
            writer.started = true
            participant.managerState = .acceptingSyncs
            participant.writer = writer
            feed(participant, [.managerState(.acceptingSyncs), .writerStarted])
            scheduleWriter(participant, .fetch, after: latency())
        case .fetch:
            guard !writer.stopping, writer.page == nil, let sync = writer.syncs.first else { return }
            if sync.name == "accounts" { nextAccountsPage(&writer) }
            writer.page = (sync.name, false)
            participant.writer = writer
            // The page's request: a round trip to the server.
            scheduleWriter(participant, .begin, after: 1_000_000 + random.next() % 30_000_000)
        case .begin:
            guard let page = writer.page, !page.inTransaction else { return }
            if writer.stopping {
                // The stop cancelled the request: the page is not saved.
                writer.page = nil
                participant.writer = writer
                pageEnded(participant, sync: page.sync, failed: nil)
                return
            }
            if serverErrorsLeft > 0 {
                // The page's request answered 503 past the client's retries.
                serverErrorsLeft -= 1
                writer.page = nil
                participant.writer = writer
                pageEnded(participant, sync: page.sync, failed: "503 Service Unavailable")
                return
            }
            if let writing = kernel.writeLock, writing != participant.index {
                let since = writer.busySince ?? now
                writer.busySince = since
                if now - since < Self.busyTimeout {
                    participant.writer = writer
                    scheduleWriter(participant, .begin, after: 2_000_000)
                    return
                }
                writer.busySince = nil
                writer.page = nil
                participant.writer = writer
                pageEnded(participant, sync: page.sync, failed: "database is locked")
                return
            }
            writer.busySince = nil
            kernel.writeLock = participant.index
            writer.page = (page.sync, true)
            participant.writer = writer
            scheduleWriter(participant, .commit, after: 500_000 + random.next() % 8_000_000)
        case .commit:
            guard let page = writer.page, page.inTransaction else { return }
            writer.page = nil
            let failure = now < diskFullUntil ? "database or disk is full" : nil
            if failure != nil, kernel.writeLock == participant.index { kernel.writeLock = nil }
            let committed = failure == nil && commit(participant, lease: writer.lease)
            if committed, page.sync == "accounts" { accountsCommitted(&writer) }
            participant.writer = writer
            pageEnded(participant, sync: page.sync, failed: committed ? nil : failure ?? "stale epoch")
            return
        }
    }

    /// The page's transaction commits if its fence holds (the store's epoch is the holding's);
    /// otherwise it rolls back. Either way SQLite's write lock is let go.
    func commit(_ participant: SimulatedParticipant, lease: SimulatedLease) -> Bool {
        if kernel.writeLock == participant.index { kernel.writeLock = nil }
        guard
            (kernel.storeEpoch == lease.epoch && kernel.pathGeneration == lease.generation)
                || options.mutation == .unfencedStart
        else {
            fencedCommits += 1
            return false
        }
        commits += 1
        if kernel.storeEpoch != lease.epoch {
            fail(
                "no commit under a stale epoch",
                "\(participant.name) committed with epoch \(lease.epoch) while the store's is \(kernel.storeEpoch)"
            )
        } else if kernel.epochHolders[lease.epoch] != participant.index {
            fail(
                "every commit comes from its epoch's holder",
                "\(participant.name) committed under epoch \(lease.epoch), recorded by \(kernel.epochHolders[lease.epoch].map { participants[$0].name } ?? "nobody")"
            )
        }
        return true
    }

    /// After a page: a stop waiting for it goes on; otherwise the next page, or the sync's end.
    func pageEnded(_ participant: SimulatedParticipant, sync: String, failed error: String?) {
        guard var writer = participant.writer else { return }
        if writer.stopping {
            participant.managerState = .stopped
            if writer.stopWaiting {
                writer.stopWaiting = false
                participant.writer = writer
                send(participant, .managerStopped)
            }
            return
        }
        var events: [Machine.Event] = []
        if let error {
            writer.syncs.removeAll { $0.name == sync }
            if sync == "accounts" { writer.accounts = nil }
            syncFailures += 1
            events = [
                .syncFailed(name: sync, error: error, storeProblem: nil, at: wallMillis), .syncStateChanged,
            ]
        } else if let first = writer.syncs.first, first.name == sync {
            if first.pages <= 1 {
                writer.syncs.removeFirst()
                events = [.syncFinished(sync), .syncStateChanged]
            } else {
                writer.syncs[0].pages -= 1
            }
        }
        participant.writer = writer
        if !writer.syncs.isEmpty { scheduleWriter(participant, .fetch, after: latency()) }
        if !events.isEmpty { feed(participant, events) }
        if error != nil { checkFailedSync(participant, sync) }
    }

    /// The stop's grace (commit what was saved) or deadline (interrupt: roll back) ends the
    /// page being saved now.
    func endPage(_ participant: SimulatedParticipant, committing: Bool) {
        guard var writer = participant.writer, let page = writer.page else { return }
        writer.page = nil
        participant.writer = writer
        if page.inTransaction {
            // An `accounts` page ended early keeps nothing here (the engine's partial save is
            // tested on its own): rolled back.
            if committing, page.sync != "accounts" {
                _ = commit(participant, lease: writer.lease)
            } else if kernel.writeLock == participant.index {
                kernel.writeLock = nil
            }
        }
        pageEnded(participant, sync: page.sync, failed: nil)
    }

    // MARK: - Faults

    func injectFault() {
        // The settle runs without faults and leaves the lifecycles as it set them.
        guard !settling else { return }
        let next: UInt64
        if !faultsOn {
            next = flipLifecycle()
        } else {
            switch random.next() % 100 {
            case 0..<55: next = flipLifecycle()
            case 55..<63: next = killOne()
            case 63..<75: next = freezeOne()
            case 75..<79: next = junkSignal()
            case 79..<82:
                // A quiet spell: long enough for a wait behind a writer to be judged.
                next = 15_000_000_000 + random.next() % 10_000_000_000
            case 82..<86: next = terminateOne()
            case 86..<92: next = serverEdit()
            case 92..<94: next = deleteLockFile()
            case 94..<97:
                // A full disk: every write fails for a while, then room comes back.
                diskFullUntil = now + 200_000_000 + random.next() % 3_000_000_000
                next = 50_000_000 + random.next() % 300_000_000
            case 97..<100:
                // The server answers 503 to the next page requests, past the client's retries.
                serverErrorsLeft = 1 + Int(random.next() % 10)
                next = 50_000_000 + random.next() % 300_000_000
            default: next = flipLifecycle()
            }
        }
        schedule(.fault, after: next)
    }

    /// A lifecycle signal: foreground or background (the host mostly foreground).
    func flipLifecycle() -> UInt64 {
        let participant = participants[Int(random.next() % UInt64(participants.count))]
        let foreground = random.next() % 100 < (participant.index == 0 ? 65 : 45)
        participant.lifecycleFile = foreground ? .foreground : .background
        if participant.state != .dead {
            schedule(.directory(participant.index, incarnation: participant.incarnation), after: latency())
        }
        return 20_000_000 + random.next() % 300_000_000
    }

    func junkSignal() -> UInt64 {
        let participant = participants[Int(random.next() % UInt64(participants.count))]
        participant.lifecycleFile = random.next() % 2 == 0 ? .junk : .missing
        if participant.state != .dead {
            schedule(.directory(participant.index, incarnation: participant.incarnation), after: latency())
        }
        return 20_000_000 + random.next() % 200_000_000
    }

    /// The writer (mostly) or anyone, killed; started again a little later.
    func killOne() -> UInt64 {
        let target = pickTarget()
        if target.state != .dead {
            kill(target)
            schedule(.restart(target.index), after: 20_000_000 + random.next() % 500_000_000)
        }
        return 50_000_000 + random.next() % 400_000_000
    }

    /// The writer (mostly) or anyone, stopped (SIGSTOP) or frozen (the cgroup freezer, seen as
    /// uninterruptible sleep), inside its page's transaction when it has one; thawed later.
    func freezeOne() -> UInt64 {
        freeze(pickTarget())
        return 50_000_000 + random.next() % 400_000_000
    }

    func freeze(_ target: SimulatedParticipant) {
        guard target.state == .running else { return }
        freezes += 1
        if target.writer?.page?.inTransaction == true { freezesInTransaction += 1 }
        target.state = random.next() % 4 == 0 ? .hung : .stopped
        lastDisturbance = now
        schedule(
            .thaw(target.index, incarnation: target.incarnation),
            after: 200_000_000 + random.next() % 8_000_000_000)
    }

    /// Now and then, a participant that has just locked `D/writer.lock` is frozen before it
    /// begins its holding (the scheduler took it off the CPU there, then a freezer caught it):
    /// the window in which a waiter may take the lease over from the last holder's record.
    func mayFreezeJustLocked(_ participant: SimulatedParticipant) {
        guard faultsOn, random.next() % 100 < 3 else { return }
        freeze(participant)
    }

    /// `D/writer.lock` deleted (a cleanup script): the path names a new file the next opener
    /// creates; the holder keeps its lock on the old one until it sees the change.
    func deleteLockFile() -> UInt64 {
        kernel.lastGeneration += 1
        kernel.files[kernel.lastGeneration] = SimulatedKernel.LockFile()
        kernel.pathGeneration = kernel.lastGeneration
        lockFileReplaced()
        return 50_000_000 + random.next() % 400_000_000
    }

    /// A recorded release's steps: its transaction begins once SQLite's write lock is free,
    /// commits the history row's end, then the lock file goes and the machine hears `released`.
    func scheduleRelease(
        _ participant: SimulatedParticipant, _ lease: SimulatedLease, _ step: WriterStep, after delay: UInt64
    ) {
        schedule(.release(participant.index, incarnation: participant.incarnation, lease, step), after: delay)
    }

    func releaseStep(_ participant: SimulatedParticipant, _ lease: SimulatedLease, _ step: WriterStep) {
        switch step {
        case .begin:
            if let writing = kernel.writeLock, writing != participant.index {
                scheduleRelease(participant, lease, .begin, after: 2_000_000)
                return
            }
            kernel.writeLock = participant.index
            scheduleRelease(participant, lease, .commit, after: 300_000 + random.next() % 3_000_000)
        case .commit:
            if kernel.writeLock == participant.index { kernel.writeLock = nil }
            recordRelease(of: lease.epoch)
            release(lease, of: participant, released: true)
            feed(participant, [.released])
        case .start, .fetch:
            break
        }
    }

    /// SIGTERM to the writer (mostly) or anyone: it must hand everything back and exit.
    func terminateOne() -> UInt64 {
        let target = pickTarget()
        if target.state != .dead {
            schedule(.terminate(target.index, incarnation: target.incarnation), after: latency())
        }
        return 50_000_000 + random.next() % 400_000_000
    }

    /// A SIGTERM lands: the participant's input says shut down (a stopped process gets it when
    /// thawed). With the planted bug, one landing just after the start is lost.
    func terminate(_ participant: SimulatedParticipant) {
        if participant.terminatedAt == nil { participant.terminatedAt = now }
        if options.mutation == .sigtermDroppedAtStart, now - participant.startedAt < 5_000_000 { return }
        feed(participant, [.shutdown])
    }

    func pickTarget() -> SimulatedParticipant {
        if random.next() % 100 < 70,
            let writer = participants.first(where: { $0.machine.phase.lease != nil && $0.state != .dead })
        {
            return writer
        }
        return participants[Int(random.next() % UInt64(participants.count))]
    }

    /// SIGKILL: the kernel lets go of its locks and waits, SQLite rolls its transaction back.
    func kill(_ participant: SimulatedParticipant) {
        kills += 1
        lastDisturbance = now
        end(participant)
    }

    /// The process is gone (killed, or exited): the kernel lets go of its locks and waits,
    /// SQLite rolls its transaction back, its status file stays.
    func end(_ participant: SimulatedParticipant) {
        participant.state = .dead
        participant.terminatedAt = nil
        participant.deferred = []
        participant.acquisition = nil
        participant.holding = nil
        participant.writer = nil
        participant.timers = []
        if kernel.writeLock == participant.index { kernel.writeLock = nil }
        // In descriptor order: a dictionary's own order changes from process to process, and
        // each close may draw from the seed (a grant), so a replay must not depend on it.
        for descriptor in kernel.descriptors.keys.sorted()
        where kernel.descriptors[descriptor]?.owner == participant.index {
            close(descriptor)
        }
        // Its status file stays, naming a process that is gone.
        statusChanged(by: participant)
    }

    /// A new process for a killed or exited participant: a new pid and a fresh machine, which
    /// starts by reading the directory. Now and then a SIGTERM follows right away (a script
    /// stopping what it just started).
    func restart(_ participant: SimulatedParticipant) {
        guard participant.state == .dead else { return }
        participant.startedAt = now
        if faultsOn, random.next() % 100 < 15 {
            schedule(
                .terminate(participant.index, incarnation: participant.incarnation + 1),
                after: random.next() % 20_000_000)
        }
        participant.incarnation += 1
        participant.pid += 100
        participant.state = .running
        participant.machine = SimulatedParticipant.freshMachine()
        participant.deadFences = []
        participant.managerState = .acceptingSyncs
        participant.published = nil
        participant.lastFrozen = nil
        schedule(.directory(participant.index, incarnation: participant.incarnation), after: latency())
    }

    /// SIGCONT: what waited for it runs now, in the seed's order.
    func thaw(_ participant: SimulatedParticipant) {
        guard participant.state == .stopped || participant.state == .hung else { return }
        participant.state = .running
        participant.lastFrozen = now
        lastDisturbance = now
        let waiting = participant.deferred
        participant.deferred = []
        for happening in waiting { schedule(happening, after: latency()) }
        // A lock let go while it was stopped may be its now.
        for descriptor in kernel.descriptors.keys.sorted() {
            guard let open = kernel.descriptors[descriptor], open.owner == participant.index else { continue }
            if kernel.files[open.generation]?.waiters.contains(descriptor) == true { grant(open.generation) }
        }
    }
}
