import BatonStore
import BatonSync
import Logging

/// What a writer runs through its sync manager: on becoming the writer, the configured soups
/// and syncs; a failed configured sync's rerun; the clean resync ghosts of syncs that ask for it,
/// queued one behind another. It reports how each went; the participant's machine decides what
/// follows.
actor WriterSyncs {
    typealias Event = ParticipantMachine<WriterLease.Held>.Event

    let configuration: ParticipantConfiguration
    let store: SharedStore
    let manager: SyncManager
    let log: ParticipantLog
    let logger: Logger
    /// Clean resync ghosts runs queued behind its sync; this awaits its outcome for the log.
    var ghostCleaning: Task<Void, Never>?

    init(
        configuration: ParticipantConfiguration, store: SharedStore, manager: SyncManager,
        log: ParticipantLog, logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.manager = manager
        self.log = log
        self.logger = logger
    }

    /// Fences the manager's writes with `held`, registers the configured soups, recovers syncs a
    /// dead writer left running, restarts the stopped ones and runs the configured ones. A sync
    /// that cannot be read stops none of this: the manager sets it aside (`failed`, with why),
    /// and a configured one is retried from the participant's `syncSetAside` input.
    ///
    /// - Returns: the manager's state, then `writerStarted`, `writerStartStale` or
    ///   `writerStartFailed` (the manager's state first: an outcome that steps down stops the
    ///   manager afterwards).
    func begin(_ held: WriterLease.Held) async -> [Event] {
        await manager.setWriteAccess(held.access)
        var outcome: Event
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
            try await runConfiguredSyncs(besides: Set(restarted.compactMap(\.name)))
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
        let guards = await unguardedTables().map { [Event.storeUnguarded($0)] } ?? []
        return [.managerState(await manager.state), outcome] + guards
    }

    /// The tables whose write guard is gone or changed, logged when there are any (nil when
    /// the store could not be read: the next writer start looks again).
    private func unguardedTables() async -> [String]? {
        do {
            let tables = try await store.read { try $0.unguardedTables() }
            if !tables.isEmpty {
                logger.error(
                    "something other than Baton changed the store", metadata: ["baton.tables": "\(tables)"])
                log.log("store.unguarded", ["tables": .array(tables.map(JSONValue.string))])
            }
            return tables
        } catch {
            // Unreadable now: the syncs' own reads report why.
            log.log("store.guardCheckFailed", ["error": .string(String(describing: error))])
            return nil
        }
    }

    /// Runs the configured syncs the restart did not resume, then queues the ghost cleaning of
    /// those that ask for it (not of those set aside: their retry runs them once repaired).
    private func runConfiguredSyncs(besides resumed: Set<String>) async throws {
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
    ///
    /// - Returns: nil, or the error when the rerun could not even start (its `running` could not
    ///   be written).
    func runAgain(_ name: String) async -> String? {
        guard let sync = configuration.syncs.first(where: { $0.name == name }) else { return nil }
        do {
            try await runConfigured(sync)
            if case .down(let name, _, _, _, true) = sync,
                let state = try await manager.getSyncStatus(name: name)
            {
                queueGhostCleaning(syncId: state.id, name: name)
            }
            return nil
        } catch {
            // The sync's retry failed (its row still unreadable, a store write refused): not a
            // failed start of the writer, which `writer.error` is; the retry goes on.
            log.log("sync.retryFailed", ["name": .string(name), "error": .string(String(describing: error))])
            return String(describing: error)
        }
    }

    func queueGhostCleaning(syncId: Int64, name: String) {
        let (manager, log, previous) = (self.manager, self.log, ghostCleaning)
        let incremental = configuration.incrementalGhostCleaning
        ghostCleaning = Task {
            await previous?.value
            do {
                let deleted = try await manager.cleanResyncGhosts(id: syncId, incremental: incremental)
                log.log("ghosts.cleaned", ["name": .string(name), "deleted": .int(Int64(deleted))])
            } catch {
                log.log(
                    "ghosts.failed", ["name": .string(name), "error": .string(String(describing: error))])
            }
        }
    }

    /// Returns once the ghost cleanings queued so far have ended.
    func finishGhostCleaning() async {
        await ghostCleaning?.value
    }
}
