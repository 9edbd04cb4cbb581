import BatonStore
import BatonSync
import Foundation

// What the machine's actions do. No rule is decided here: each action does one thing and
// reports how it went.
extension Participant {
    /// Carries out one action; returns the events that say how it went.
    func carryOut(_ action: Machine.Action) async -> [Machine.Event] {
        switch action {
        case .publish:
            // Written off the loop; `published` or `publishFailed` arrives as its own input.
            publisher.submit(reader.status(of: machine))
        case .record(let note):
            recorder.record(note)
        case .startAcquiring:
            // Whoever decides by this participant's status (a lower-priority waiter holding
            // back) reads it as waiting before the wait begins.
            await publisher.flush()
            startAcquiring()
        case .cancelAcquiring:
            await leaseWait?.cancel()
            leaseWait = nil
            // A holding the wait took just before the cancel landed (never the machine's: it
            // asks this only while it holds none) goes back untouched.
            if let taken = lease.current { releaseUnused(taken) }
        case .becomeWriter(let held):
            return await syncs.begin(held)
        case .resumeEditWaiters:
            let waiters = writerWaiters
            writerWaiters = [:]
            for waiter in waiters.values { waiter.resume() }
        case .runSync(let name):
            guard let error = await syncs.runAgain(name) else { return [] }
            return [reader.syncFailed(name, error: error)]
        case .releaseLease(let held, let reason, let recordRelease, let stopBegan):
            // The release time goes into the lock file (the next holder's first write records
            // it). Fenced, the interval is the taker's to close: this process writes nothing.
            lease.release(held, recordRelease: recordRelease)
            recorder.record(
                .leaseReleased(
                    epoch: held.epoch, reason: reason, releaseMillis: MonotonicClock.millis() - stopBegan))
            store.resumeWrites()
            return [.released]
        case .releaseUnused(let held):
            releaseUnused(held)
        case .scheduleTimer(let id, let delay):
            let sink = self.sink
            timers[id] = Task {
                // Cancelled: the machine no longer wants it.
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                sink.yield(.timerFired(id))
            }
        case .cancelTimer(let id):
            timers.removeValue(forKey: id)?.cancel()
        case .exit:
            await publisher.flush()
        case .stopManager, .awaitManagerStop, .endPageSaveEarly, .interruptStore, .flushUnpersisted,
            .copyBackCompletely, .checkpointAfterRelease, .dropWriteAccess, .checkStore, .checkLockFile,
            .checkPriority, .refreshWriterHint, .readManagerState:
            return await carryOutStep(action)
        }
        return []
    }

    /// The stop's steps and the checks.
    private func carryOutStep(_ action: Machine.Action) async -> [Machine.Event] {
        switch action {
        case .stopManager(let reason):
            let began = MonotonicClock.millis()
            log.log("stop.requested", ["reason": .string(reason.rawValue)])
            await manager.stop()
            return [.managerStopping(await manager.state, began: began)]
        case .awaitManagerStop:
            let (manager, sink) = (self.manager, self.sink)
            stopWait = Task {
                await manager.waitUntilStopped()
                sink.yield(.managerStopped)
            }
        case .endPageSaveEarly:
            if await manager.endPageSaveEarly() { log.log("stop.grace", ["action": "endPageSave"]) }
        case .interruptStore:
            log.log("stop.deadline", ["action": "interrupt"])
            store.interrupt()
        case .flushUnpersisted:
            let unpersisted = await manager.flushUnpersisted()
            if !unpersisted.isEmpty {
                log.log("syncs.unpersisted", ["ids": .array(unpersisted.map(JSONValue.int))])
            }
        case .copyBackCompletely:
            let copied = store.checkpointCompletely(deadline: .now + configuration.stopDeadline)
            log.log("store.copiedBack", ["complete": .bool(copied)])
        case .checkpointAfterRelease:
            store.checkpointAfterRelease()
        case .dropWriteAccess:
            await manager.setWriteAccess(nil)
            await manager.setNotAcceptingHint(
                "participant '\(configuration.name)' does not hold the writer lease")
            return [.managerState(await manager.state), .syncsStopped]
        case .checkStore:
            return [reader.checkStore()]
        case .checkLockFile(let held):
            return reader.checkLockFile(held, of: lease)
        case .checkPriority:
            return reader.higherPriorityIsWaiting()
        case .refreshWriterHint:
            await manager.setNotAcceptingHint(reader.notWriterHint())
        case .readManagerState:
            return [.managerState(await manager.state)]
        default:
            preconditionFailure("\(action) is carried out by carryOut(_:)")
        }
        return []
    }

    // MARK: - The lease

    func startAcquiring() {
        guard leaseWait == nil else { return }
        if let taken = lease.current {
            // Taken by an earlier wait whose grant is still queued (the machine asks only while
            // it holds none): use it now.
            sink.yield(.leaseGranted(taken, waitMillis: 0, wait: nil))
            return
        }
        recorder.record(.leaseWaiting)
        leaseWait = LeaseWait(lease: lease, for: configuration, in: directory, sink: sink)
    }

    func releaseUnused(_ held: WriterLease.Held) {
        lease.release(held)
        recorder.record(.leaseReleased(epoch: held.epoch, reason: nil, releaseMillis: nil))
    }
}
