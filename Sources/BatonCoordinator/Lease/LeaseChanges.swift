import BatonLocking
import BatonStore
import Foundation

/// Wakes a waiting acquisition: when a participant publishes its state, when `D/writer.lock` is
/// replaced or deleted (a takeover: the waits on the old generation are moot), when the kernel
/// grants the lock, when `wait` times out, or when the task is cancelled.
final class LeaseChanges: Sendable {
    private let state = Locked<(rings: Int, waiters: [UnsafeContinuation<Void, Never>])>((0, []))
    private let listener = Locked<Task<Void, Never>?>(nil)
    private let clock = LeaseClock()

    init(directory: SharedDirectory) {
        guard
            // Without inotify (out of watches), a wait still ends on its timeout, a grant or cancellation.
            let events = try? DirectoryWatcher(
                root: directory.path, subdirectories: ["participants"], rootNamesOnly: true
            ).events()
        else { return }
        let lockPath = directory.writerLockPath
        let task = Task { [self] in
            // Only a new generation of the lock file matters (a takeover, a deletion): every
            // process that opens and closes it makes an event too.
            var generation = FileIdentity.of(lockPath)
            for await event in events {
                if case .changed(let sub, let name) = event {
                    if sub == "" {
                        guard name == "writer.lock" else { continue }
                        let now = FileIdentity.of(lockPath)
                        guard now != generation else { continue }
                        generation = now
                    } else if !ParticipantStatus.isStatusFile(name, in: directory) {
                        // Junk in participants/ never wakes a waiter.
                        continue
                    }
                }
                ring()
            }
        }
        listener.withLock { $0 = task }
    }

    func stop() {
        listener.withLock { $0?.cancel() }
        clock.stop()
    }

    @Sendable func ring() {
        let waiters = state.withLock { state in
            state.rings += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Changes seen so far.
    var rings: Int { state.withLock { $0.rings } }

    /// Returns once there were more than `seen` changes, after `timeout`, or on cancellation,
    /// whichever comes first.
    func wait(after seen: Int, timeout: Duration) async {
        // The lease's own clock, not a dispatch timer or a sleeping task: every contended turn
        // of the lease waits once, and either would cost a thread switch to set up.
        let timer = clock.schedule(at: ContinuousClock.now + timeout) { [self] in ring() }
        defer { clock.cancel(timer) }
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.rings != seen { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }
}
