import BatonStore

// How a sync's end is persisted even when the write fails: kept, and written again until it
// lands.
extension SyncManager {
    /// Persists a final state; it lands even from a cancelled task.
    ///
    /// When the write fails (a full disk, a lock held elsewhere), the store would go on saying
    /// `running` with nothing running the sync: the state is kept and written again, with a
    /// growing pause, until it lands, the sync runs again, or the lease moves on.
    func persistFinal(_ state: SyncState, onUpdate: SyncUpdateBlock?) async {
        do {
            try await writeUncancelled(state, through: writer())
            unpersistedFinals[state.id] = nil
        } catch {
            logger.error(
                "could not persist the end of a sync; will try again",
                metadata: ["baton.sync": "\(state.id)", "baton.error": "\(error)"])
            unpersistedFinals[state.id] = state
            startFlushingFinals()
        }
        notify(state, onUpdate: onUpdate)
    }

    func startFlushingFinals() {
        guard finalsFlusher == nil else { return }
        finalsFlusher = Task {
            var pause = Duration.milliseconds(50)
            while await self.flushFinals() {
                do { try await Task.sleep(for: pause) } catch { break }
                pause = min(pause * 2, .seconds(2))
            }
            self.flusherEnded()
        }
    }

    func flusherEnded() {
        finalsFlusher = nil
        if !unpersistedFinals.isEmpty || !unpersistedSetAsides.isEmpty { startFlushingFinals() }
    }

    /// Tries once more to write the final states that could not be persisted (the coordinator
    /// does this before it lets go of the lease).
    ///
    /// - Returns: the ids still unpersisted.
    @discardableResult
    public func flushUnpersisted() async -> [Int64] {
        _ = await flushFinals()
        return unpersistedSyncIds
    }

    /// Writes the unpersisted final states; returns true while some are left.
    func flushFinals() async -> Bool {
        // A sync submitted again meanwhile left this list in `submit`.
        for (id, state) in unpersistedFinals.sorted(by: { $0.key < $1.key }) {
            do {
                try await writeUncancelled(state, through: writer())
                // A run submitted meanwhile took over: leave its state alone next time.
                if unpersistedFinals[id] == state { unpersistedFinals[id] = nil }
            } catch let error as StoreError where error.code == .staleEpoch || error.code == .storeFileChanged
            {
                unpersistedFinals[id] = nil  // no longer ours to write
            } catch {
                return true
            }
        }
        for (id, error) in unpersistedSetAsides.sorted(by: { $0.key < $1.key }) {
            do {
                try await writeSetAside(id, error: error, through: writer())
                if unpersistedSetAsides[id] == error { unpersistedSetAsides[id] = nil }
            } catch let error as StoreError where error.code == .staleEpoch || error.code == .storeFileChanged
            {
                unpersistedSetAsides[id] = nil  // no longer ours to write: the next writer meets it again
            } catch {
                return true
            }
        }
        return !unpersistedFinals.isEmpty || !unpersistedSetAsides.isEmpty
    }
}
