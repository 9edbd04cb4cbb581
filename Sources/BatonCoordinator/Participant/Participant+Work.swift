import BatonStore
import BatonSync
import Foundation
import Logging

// What the participant's actions do, and the checks that turn the directory's changes into the
// machine's events. No rule is decided here: each function reports what happened.
extension Participant {
    // MARK: - The shared directory

    /// Takes `D/participants/<name>.lock` (freed by the kernel when the process dies) and
    /// records this process's pid in it.
    ///
    /// - Throws: `nameInUse`, naming the pid, when a live process holds the name.
    static func claimName(_ name: String, in directory: SharedDirectory) throws -> FileLock {
        let path = directory.participantsPath + "/\(name).lock"
        let lock = try FileLock(path: path)
        guard try lock.tryLock() else {
            let pid =
                FileLock.recorded(at: path)?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
            throw CoordinatorError(
                .nameInUse,
                "participant '\(name)' is already running (pid \(pid)) in \(directory.path); stop it first or choose another --name"
            )
        }
        lock.record("\(getpid())\n")
        return lock
    }

    /// After a rescan: if `participants/` was deleted or its lock file replaced, takes the name
    /// again (logging when another process got it first). Returns whether it had to.
    @discardableResult
    func reclaimName() -> Bool {
        guard !nameLock.isStillAtPath else { return false }
        do {
            try directory.ensureSubdirectory(directory.participantsPath)
            let fresh = try Self.claimName(configuration.name, in: directory)
            nameLock.unlock()
            nameLock = fresh
            log.log("name.reclaimed")
        } catch {
            log.log("name.lost", ["error": .string(String(describing: error))])
            logger.error(
                "could not take this participant's name again", metadata: ["baton.error": "\(error)"])
        }
        return true
    }

    /// A change in the shared directory: re-reads what it may have changed (level-triggered)
    /// and feeds what it found. Returns true when the loop must end.
    func directoryChanged(_ change: DirectoryWatcher.Event) async -> Bool {
        if case .rescan(let reason) = change {
            if reason != "start" {
                logger.warning("rescanning the shared directory", metadata: ["baton.reason": "\(reason)"])
                log.log("rescan", ["reason": .string(reason)])
            }
            // At the start too: `participants/` may have been replaced after the name was claimed
            // and the status published, but before the watch began (no event says so then).
            let reclaimed = reclaimName()
            if reason != "start" || reclaimed, await feed(.publishRequested) { return true }
        }
        if case .changed(let sub, let name) = change {
            switch sub {
            case "lifecycle":
                if name != configuration.name { return false }
            case "participants":
                // Junk there costs one stat, never a read of the directory.
                if !ParticipantStatus.isStatusFile(name, in: directory) { return false }
            case "":
                if name == "writer.lock" { return await checkLockFile() }
                if name.hasPrefix("store.sqlite") { return await checkStoreFile() }
                return false
            default:
                return false
            }
        }
        switch LifecycleSignal.read(directory: directory, name: configuration.name) {
        case .valid(let lifecycle):
            if await feed(.lifecycle(lifecycle)) { return true }
        case .invalid(let reason):
            if await feed(.lifecycleIgnored(reason, at: WallClock.nowMillis())) { return true }
        case .empty:
            if await feed(.lifecycleIgnored("is empty", at: WallClock.nowMillis())) { return true }
        case .missing:
            if await feed(.lifecycleMissing) { return true }
        }
        // A store file gone is all that matters then (the machine hands the lease over).
        if let reason = store.fileProblem() { return await feed(.storeLost(reason)) }
        if machine.isStoreLost { return await feed(.storeBack) }
        if machine.phase.name != .writer {
            await manager.setNotAcceptingHint(
                "participant '\(configuration.name)' does not hold the writer lease\(writerHint())")
        } else if higherPriorityIsWaiting() {
            return await feed(.higherPriorityWaiting)
        }
        return false
    }

    /// A participant with a higher priority, alive, foreground and waiting for the lease.
    nonisolated func higherPriorityIsWaiting() -> Bool {
        Self.higherPriorityIsWaiting(than: configuration, in: directory)
    }

    static func higherPriorityIsWaiting(than me: ParticipantConfiguration, in directory: SharedDirectory)
        -> Bool
    {
        ParticipantStatus.readAll(in: directory).contains { other in
            other.name != me.name && other.priority > me.priority && other.isWaiting
                && other.lifecycle == .foreground && other.isAlive
        }
    }

    /// When `D/writer.lock` was deleted or replaced while this process holds the lease, it may
    /// not write: another participant took the lease over (this one had stopped renewing it:
    /// frozen, hung), or somebody deleted the file and another process can lock the new one.
    func checkLockFile() async -> Bool {
        guard machine.phase.lease != nil, !lease.holdsLockFile else { return false }
        // Taken over: the file now in place says it took this epoch over (a taker renames its
        // file in before its transaction commits, so the store may not say so yet).
        let successor = HeartbeatRecord.read(at: directory.writerLockPath)
        let takenOver = successor?.takenOver == machine.phase.lease?.epoch
        return await feed(
            .leaseLost(
                takenOver: takenOver,
                successor: successor.map { $0.line.trimmingCharacters(in: .whitespacesAndNewlines) }))
    }

    /// When one of the store's files was deleted, renamed or replaced: feeds it (the machine
    /// says so and, as writer, hands the lease over); when they are all back after that, feeds
    /// that.
    func checkStoreFile() async -> Bool {
        guard let reason = store.fileProblem() else {
            return machine.isStoreLost ? await feed(.storeBack) : false
        }
        return await feed(.storeLost(reason))
    }

    /// The machine's store check: the files back as opened, or a store at the path reopened,
    /// or why not yet.
    func checkStore() -> Machine.Event {
        do {
            switch try store.reopen() {
            case .unchanged: return .storeBack
            case .reopened(let problem): return .storeReopened(problem.description)
            }
        } catch let error as StoreError {
            return .storeReopenFailed(error.message)
        } catch {
            return .storeReopenFailed(String(describing: error))
        }
    }

    /// A configured sync failed: with what the store file check says right now (a sync that
    /// failed because the store went away is not retried).
    func syncFailed(_ name: String, error: String?) -> Machine.Event {
        .syncFailed(name: name, error: error, storeProblem: store.fileProblem(), at: WallClock.nowMillis())
    }

    // MARK: - The lease

    func startAcquiring() {
        guard acquiring == nil else { return }
        if let taken = lease.current, machine.phase.lease == nil {
            // Taken by an earlier wait whose grant is still queued: use it now.
            sink.yield(.leaseGranted(taken, waitMillis: 0, wait: nil))
            return
        }
        record(.leaseWaiting)
        let (lease, sink, directory, me) = (self.lease, self.sink, self.directory, configuration)
        let (started, id) = (MonotonicClock.millis(), UUID())
        let task = Task {
            do {
                let held = try await lease.acquire(
                    // Hold back while a higher-priority participant waits for the lease.
                    mayTry: { !Self.higherPriorityIsWaiting(than: me, in: directory) },
                    onBlocked: { sink.yield(.leaseBlocked($0)) })
                sink.yield(.leaseGranted(held, waitMillis: MonotonicClock.millis() - started, wait: id))
            } catch is CancellationError {
                return
            } catch {
                sink.yield(.leaseFailed(String(describing: error), wait: id))
            }
        }
        acquiring = (id, task)
    }

    /// Stops the wait; a holding it took just before the cancel landed (never the machine's) goes
    /// back untouched.
    func cancelAcquiring() async {
        acquiring?.task.cancel()
        await acquiring?.task.value
        acquiring = nil
        if machine.phase.lease == nil, let taken = lease.current { releaseUnused(taken) }
    }

    func releaseUnused(_ held: WriterLease.Held) {
        lease.release(held)
        record(.leaseReleased(epoch: held.epoch, reason: nil, releaseMillis: nil))
    }

    // MARK: - Syncs

    /// Fences the manager's writes with `held`, registers the configured soups, recovers syncs a
    /// dead writer left running, restarts the stopped ones and runs the configured ones. A sync
    /// that cannot be read stops none of this: the manager sets it aside (`failed`, with why),
    /// and a configured one is retried from ``Input/syncSetAside(_:)``.
    func becomeWriter(_ held: WriterLease.Held) async -> [Machine.Event] {
        await manager.setWriteAccess(held.access)
        var outcome: Machine.Event
        do {
            for soup in configuration.soups {
                try await store.registerSoup(soup.name, indexSpecs: soup.indexSpecs, fence: held.fence)
            }
            let recovered = try await manager.recoverInterruptedSyncs(under: held.access)
            if !recovered.isEmpty {
                log.log("syncs.recovered", ["ids": .array(recovered.map(JSONValue.int))])
            }
            let restarted = try await manager.restart(restartStoppedSyncs: true)
            log.log("manager.restarted", ["resumed": .array(restarted.map { .int($0.id) })])
            let resumed = Set(restarted.compactMap(\.name))
            var setAside: Set<String> = []
            for sync in configuration.syncs where !resumed.contains(sync.name) {
                do {
                    try await runConfigured(sync)
                } catch let error as SyncError where error.code == .unreadableSync {
                    // Set aside and reported by the manager; its retry runs it once repaired.
                    setAside.insert(sync.name)
                }
            }
            for case .down(let name, _, _, _, true) in configuration.syncs where !setAside.contains(name) {
                guard let state = try await manager.getSyncStatus(name: name) else { continue }
                queueGhostCleaning(syncId: state.id, name: name)
            }
            outcome = .writerStarted
        } catch let error as StoreError where error.code == .staleEpoch {
            // The store's epoch moved past this holding before it could record itself: another
            // process recorded a newer one (it held a lock on a writer.lock replaced meanwhile).
            logger.error("the writer lease moved before this holding's first write; stepping down")
            log.log("writer.error", ["error": .string(String(describing: error))])
            outcome = .writerStartStale
        } catch {
            logger.error("could not start syncs as writer", metadata: ["baton.error": "\(error)"])
            log.log("writer.error", ["error": .string(String(describing: error))])
            outcome = .writerStartFailed(String(describing: error))
        }
        // The manager's state first: an outcome that steps down stops the manager afterwards.
        var events: [Machine.Event] = [.managerState(await manager.state), outcome]
        // A higher-priority participant that began to wait after this wait's last look, but
        // whose status this loop read before the grant: no change is coming to say so again.
        if outcome == .writerStarted, higherPriorityIsWaiting() { events.append(.higherPriorityWaiting) }
        return events
    }

    /// Runs a configured sync: reSyncs its stored state, or creates it.
    ///
    /// - Throws: `unreadableSync` when its stored state cannot be read (the manager set it aside).
    func runConfigured(_ sync: ConfiguredSync) async throws {
        if let existing = try StoredSync.byName(sync.name, store: store) {
            // Persisted `running` but not running here (its end could not be written): the
            // manager resumes it; one it runs already answers `alreadyRunning`.
            do {
                try await manager.reSync(id: existing.id)
            } catch let error as SyncError where error.code == .alreadyRunning {
                return
            }
            return
        }
        switch sync {
        case .down(let name, let soup, let target, let options, _):
            try await manager.syncDown(target: target, options: options, soupName: soup, name: name)
        case .up(let name, let soup, let target, let options):
            try await manager.syncUp(target: target, options: options, soupName: soup, name: name)
        }
    }

    /// A failed configured sync's retry: runs it again (and its ghost cleaning).
    func runAgain(_ name: String) async -> [Machine.Event] {
        guard let sync = configuration.syncs.first(where: { $0.name == name }) else { return [] }
        do {
            try await runConfigured(sync)
            if case .down(let name, _, _, _, true) = sync,
                let state = try await manager.getSyncStatus(name: name)
            {
                queueGhostCleaning(syncId: state.id, name: name)
            }
            return []
        } catch {
            // The rerun could not even start (its `running` could not be written).
            log.log("writer.error", ["error": .string(String(describing: error))])
            return [syncFailed(name, error: String(describing: error))]
        }
    }

    func queueGhostCleaning(syncId: Int64, name: String) {
        let (manager, log, previous) = (self.manager, self.log, ghostCleaning)
        ghostCleaning = Task {
            await previous?.value
            do {
                let deleted = try await manager.cleanResyncGhosts(id: syncId)
                log.log("ghosts.cleaned", ["name": .string(name), "deleted": .int(Int64(deleted))])
            } catch {
                log.log(
                    "ghosts.failed", ["name": .string(name), "error": .string(String(describing: error))])
            }
        }
    }

    /// `stop()`, wait for `isStopped()` (interrupting the statement in flight past the
    /// deadline), a last try at sync ends not yet written, a checkpoint asked for after the
    /// release, and no more writes through the lease.
    func stopSyncs(_ reason: ReleaseReason) async -> [Machine.Event] {
        let started = MonotonicClock.millis()
        let begun = ContinuousClock.now
        log.log("stop.requested", ["reason": .string(reason.rawValue)])
        await manager.stop()
        // Logged now, before the wait, so the log reads in order. The machine answers a manager
        // state with a record and a publish only: never an exit, never another stop.
        let ended = await feed(.managerState(await manager.state))
        assert(!ended, "a manager state ended the participant")
        // Past the save grace, end the page being saved at its next record (what it saved
        // stays). Past the deadline, interrupt the SQLite statement in flight (its page rolls
        // back) and abandon a wait for a lock held elsewhere, so the stop completes. The
        // watchdog is cancelled as soon as the stop is done.
        let (store, log, manager, deadline) = (self.store, self.log, self.manager, configuration.stopDeadline)
        let grace = configuration.saveGrace.map { min($0, deadline) }
        if grace == .zero, await manager.endPageSaveEarly() {
            log.log("stop.grace", ["action": "endPageSave"])
        }
        let watchdog = Task {
            if let grace, grace > .zero {
                try await Task.sleep(for: grace)
                if await manager.endPageSaveEarly() { log.log("stop.grace", ["action": "endPageSave"]) }
            }
            try await Task.sleep(for: deadline - (grace ?? .zero))
            log.log("stop.deadline", ["action": "interrupt"])
            store.interrupt()
        }
        await manager.waitUntilStopped()
        watchdog.cancel()
        if ContinuousClock.now - begun < deadline {
            // A sync's end that could not be written yet: one more try while the lease is held
            // (past it, the next holder's recovery sets it `stopped`).
            let unpersisted = await manager.flushUnpersisted()
            if !unpersisted.isEmpty {
                log.log("syncs.unpersisted", ["ids": .array(unpersisted.map(JSONValue.int))])
            }
        }
        let stopMs = MonotonicClock.millis() - started
        log.log("stopped", ["stopMs": .double((stopMs * 10).rounded() / 10)])
        if reason == .storeLost {
            // What this writer committed into a log that was deleted or replaced is seen by
            // nobody else: it goes into the store file before the lease does.
            let copied = store.checkpointCompletely(
                deadline: ContinuousClock.now + configuration.stopDeadline)
            log.log("store.copiedBack", ["complete": .bool(copied)])
        } else {
            // Copied back after the release, on another thread: nobody waits for it.
            store.checkpointAfterRelease()
        }
        await manager.setWriteAccess(nil)
        await manager.setNotAcceptingHint(
            "participant '\(configuration.name)' does not hold the writer lease")
        return [.managerState(await manager.state), .syncsStopped(began: started)]
    }

    // MARK: - Status and log

    /// Logs (and broadcasts, where a ``ParticipantEvent`` says the same) what the machine noted.
    func record(_ note: Machine.Note) {
        switch note {
        case .lifecycle(let lifecycle):
            record(ParticipantEvent.lifecycle(lifecycle))
        case .lifecycleIgnored(let reason):
            logger.warning("ignoring the lifecycle signal file", metadata: ["baton.reason": "\(reason)"])
            log.log("lifecycle.ignored", ["reason": .string(reason)])
        case .leaseAcquired(let held, let waitMillis):
            if let takeover = held.takeover {
                record(.leaseTookOver(epoch: held.epoch, from: takeover))
                logger.warning(
                    "took the writer lease over from a holder that stopped renewing it",
                    metadata: [
                        "baton.holder":
                            "\(takeover.name ?? "?") (pid \(takeover.pid.map(String.init) ?? "?"))",
                        "baton.holderState": "\(takeover.holderState.rawValue)",
                    ])
            }
            record(.leaseAcquired(epoch: held.epoch, waitMillis: waitMillis))
        case .leaseFailed(let reason):
            log.log("lease.failed", ["reason": .string(reason)])
            logger.error("could not take the writer lease", metadata: ["baton.reason": "\(reason)"])
        case .leaseLost(let held, let takenOver, let successor):
            logger.error(
                takenOver
                    ? "the writer lease was taken over while this process was not renewing it; stepping down"
                    : "the writer lock file was deleted or replaced; stepping down")
            record(.leaseLost(epoch: held.epoch, takenOver: takenOver, successor: successor))
        case .leaseBlocked(let blocked):
            if let blocked {
                logger.error(
                    "the writer lease cannot be taken over", metadata: ["baton.reason": "\(blocked.message)"])
            }
            record(ParticipantEvent.leaseBlocked(blocked))
        case .storeLost(let reason):
            logger.error("the store file changed under this process", metadata: ["baton.reason": "\(reason)"])
            log.log("store.lost", ["reason": .string(reason)])
        case .storeBack:
            logger.notice("the store file is back in place")
            log.log("store.back", [:])
        case .storeReopened(let what):
            logger.notice("reopened the store", metadata: ["baton.reason": "\(what)"])
            log.log("store.reopened", ["reason": .string(what)])
        case .syncRetry(let name, let attempt, let delay):
            record(ParticipantEvent.syncRetry(name: name, attempt: attempt, delay: delay))
        case .problem(let text):
            record(ParticipantEvent.problem(text))
        case .manager(let state):
            record(ParticipantEvent.manager(state))
        case .statusFailed(let error):
            log.log("status.failed", ["error": .string(error)])
            logger.error("could not publish the participant's status", metadata: ["baton.error": "\(error)"])
        }
    }

    /// Logs and broadcasts `event`.
    func record(_ event: ParticipantEvent) {
        Self.record(event, log: log, broadcaster: broadcaster)
    }

    /// ``record(_:)`` from outside the actor: the manager's observer records each sync state as
    /// it persists it, so the log holds them in order with what follows (a clean resync ghosts
    /// logged after its sync).
    static func record(
        _ event: ParticipantEvent, log: ParticipantLog, broadcaster: Broadcaster<ParticipantEvent>
    ) {
        log.log(event.logName, event.logFields)
        broadcaster.send(event)
    }

    func writerHint() -> String {
        guard
            let writer = ParticipantStatus.readAll(in: directory).first(where: { $0.isWriter && $0.isAlive })
        else { return "" }
        return "; the writer is '\(writer.name)' (pid \(writer.pid))"
    }

    /// The status the machine's state says, for the status file.
    func status() -> ParticipantStatus {
        ParticipantStatus(
            role: configuration.role, name: configuration.name, priority: configuration.priority,
            pid: getpid(), lifecycle: machine.desired, phase: machine.phase.name,
            epoch: machine.phase.lease?.epoch,
            managerState: machine.managerState?.rawValue ?? "stopped", updated: WallClock.nowMillis(),
            problem: machine.problem?.description, retrying: machine.retrying,
            refusedSignal: machine.refusedSignal)
    }
}
