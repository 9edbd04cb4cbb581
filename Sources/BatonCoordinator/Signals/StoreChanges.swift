import BatonStore

extension SharedStore {
    /// The store's change sequence as commits land, in any process: the current value first,
    /// then each new one, woken by inotify on `D/changes` (which every committed write rewrites).
    /// A burst of commits may be coalesced into its last value, which is never missed: after each
    /// doorbell the sequence is read from the store itself.
    ///
    /// GRDB's `ValueObservation` does not see other processes' commits; this does.
    ///
    /// - Throws: `watchFailed` when the directory cannot be watched.
    public func changes() throws -> AsyncStream<Int64> {
        // `D/changes` is rewritten in place: its close is the event (not a new name).
        let watcher = DirectoryWatcher(root: directory.path, subdirectories: [])
        let events = try watcher.events()
        let (stream, continuation) = AsyncStream.makeStream(
            of: Int64.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task { [self] in
            // A failed read (store busy or gone) is retried at the next change.
            var last = try? changeSequence()
            if let last { continuation.yield(last) }
            for await event in events {
                switch event {
                case .changed(_, let name) where name != "changes": continue
                default: break
                }
                // As above: a failed read waits for the next change.
                guard let now = try? changeSequence(), now != last else { continue }
                last = now
                continuation.yield(now)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The result of `query` on `soup`, now and each time a commit (from any process) changes
    /// it: re-run when the change sequence moves, yielded only when the entries differ.
    public func observe(_ query: SoupQuery, in soup: String) throws -> AsyncStream<[SoupEntry]> {
        let sequence = try changes()
        let (stream, continuation) = AsyncStream.makeStream(
            of: [SoupEntry].self, bufferingPolicy: .bufferingNewest(1))
        let task = Task { [self] in
            var last: [SoupEntry]?
            for await _ in sequence {
                // A failed query (store busy or gone) is run again at the next change.
                guard let entries = try? await read({ try $0.query(query, in: soup) }), entries != last else {
                    continue
                }
                last = entries
                continuation.yield(entries)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
