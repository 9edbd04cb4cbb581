import Dispatch
import GRDB

/// WAL checkpoints: run passively, and held back while the writer lease is held.
extension SharedStore {
    /// A passive WAL checkpoint: copies what it can without waiting for readers.
    public func checkpoint() throws {
        do {
            let result = try connections().writeWithoutTransaction { db in try db.checkpoint(.passive) }
            checkpoints.checkpointed(
                walFrames: CInt(clamping: result.walFrameCount),
                copied: CInt(clamping: result.checkpointedFrameCount))
        } catch let error as DatabaseError {
            throw StoreError.from(error, context: "checkpointing")
        }
    }

    /// Holds this process's automatic WAL checkpoints back until ``releaseCheckpoints()``. The
    /// writer lease does this while held, so no process queued for it waits for a checkpoint.
    public func holdCheckpoints() {
        checkpoints.hold()
    }

    /// Ends a ``holdCheckpoints()`` and runs the checkpoint it held back, if one is due.
    public func releaseCheckpoints() {
        guard checkpoints.release() else { return }
        checkpointQuietly()
    }

    /// Ends a ``holdCheckpoints()``; the checkpoint it held back, if one is due, runs on another
    /// thread, unless checkpoints are held again by then (the next release runs it). For the
    /// writer lease's release: the lease is let go already, and whoever released it (a stop, a
    /// hand-over) does not wait for the copy and its `fdatasync`s either.
    package func releaseCheckpointsAfterwards() {
        guard checkpoints.release() else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            guard !checkpoints.isHeld else { return }
            checkpointQuietly()
        }
    }

    /// A passive checkpoint of whatever the WAL holds that is not in the database file yet,
    /// run once this process's checkpoints are no longer held (the writer lease let go), on
    /// another thread: for a stop, after which this process may write nothing for a while,
    /// without making the stop or the next holder wait for the copy and its `fdatasync`s.
    package func checkpointAfterRelease() {
        guard !checkpoints.checkpointAtRelease() else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            guard !checkpoints.isHeld else { return }
            checkpointQuietly()
        }
    }

    private func checkpointQuietly() {
        do {
            try checkpoint()
        } catch {
            // A passive checkpoint that finds the store busy is skipped and runs another time:
            // normal, not a failure.
            logger.debug("WAL checkpoint skipped", metadata: ["error": "\(error)"])
        }
    }
}
