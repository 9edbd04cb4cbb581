import BatonLocking
import Foundation
import Synchronization

/// A task executor for the code that takes turns of a writer lease: a task that prefers it
/// (`withTaskExecutorPreference(lease.executor) { ... }`) waits for a contended lease on the
/// thread that then runs its turn. The kernel's grant wakes that thread, and the turn's first
/// write runs on it at once: no hop into the cooperative pool, one cross-process wake-up per
/// hand-over, as a bare `flock` has.
///
/// One thread runs the jobs of the tasks that prefer it, in order. A wait for the lock blocks
/// that thread in the kernel once the waiting task's job has returned. A job enqueued meanwhile
/// from elsewhere (the wait's timeout, a cancellation, another task) gets a thread of its own, and
/// the blocked one ends once its wait does: its grant wakes the task on the new thread, as a
/// waiting thread of its own would.
public final class LeaseExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.

    private struct Worker: Equatable {
        let id: Int
    }

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    /// The blocking wait to run once the current job returns (``blockAfterCurrentJob(_:)``).
    private var blocking: (@Sendable () -> Void)?
    /// The worker serving the queue, and the one blocked in a wait (nil when none is).
    private var serving: Worker?
    private var blocked: Worker?
    private var nextWorker = 0
    private var isShutDown = false
    /// Threads started over the executor's life (a test sees whether a hand-over needed one).
    private var started = 0

    /// Makes an executor; its first job starts its thread.
    public init() {}

    /// Whether the calling code runs on this executor's thread (a job of a task that prefers it).
    public var isCurrent: Bool { Self.currentWorker.get(of: self) != nil }

    /// Threads started so far: one for the executor's life unless a wait had to be left behind.
    public var threadsStarted: Int {
        condition.lock()
        defer { condition.unlock() }
        return started
    }

    /// Queues `job` for the executor's thread (a new thread takes the queue over when the one it
    /// has is blocked in a wait).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        jobs.append(job)
        if serving == nil || (serving == blocked && !isOnWorker(blocked)) {
            // Nobody serves the queue, or its worker is blocked in a wait that has not ended: a
            // new worker takes the queue over.
            startWorker()
        } else {
            condition.broadcast()
        }
    }

    /// Runs `wait` (a blocking call) on this executor's thread once the job running now returns,
    /// before the next job. Call it from a job of this executor (``isCurrent``).
    func blockAfterCurrentJob(_ wait: @escaping @Sendable () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        blocking = wait
    }

    /// Lets the thread end once the queue is empty.
    func shutDown() {
        condition.lock()
        defer { condition.unlock() }
        isShutDown = true
        condition.broadcast()
    }

    /// The worker the calling thread is, if it is one of this executor's.
    private static let currentWorker = ThreadLocalWorker()

    private func isOnWorker(_ worker: Worker?) -> Bool {
        guard let worker else { return false }
        return Self.currentWorker.get(of: self) == worker.id
    }

    /// Under `condition`.
    private func startWorker() {
        let worker = Worker(id: nextWorker)
        nextWorker += 1
        started += 1
        serving = worker
        startThread(named: "baton.executor") { [self] in run(as: worker) }
    }

    private func run(as worker: Worker) {
        Self.currentWorker.set(worker.id, of: self)
        let unowned = asUnownedTaskExecutor()
        condition.lock()
        while true {
            guard serving == worker else { break }
            if let wait = blocking {
                blocking = nil
                if !jobs.isEmpty {
                    // Jobs of other tasks are queued: they get a worker of their own.
                    startWorker()
                }
                blocked = worker
                condition.unlock()
                wait()
                condition.lock()
                if blocked == worker { blocked = nil }
                continue
            }
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: unowned)
                condition.lock()
                continue
            }
            if isShutDown {
                serving = nil
                break
            }
            condition.wait()
        }
        condition.unlock()
    }
}

/// Which worker of which executor a thread is (a thread serves one executor).
private final class ThreadLocalWorker: Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        // A thread's box goes with it.
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<AnyObject>.fromOpaque(raw).release() }
        }
        self.key = key
    }

    func set(_ id: Int, of executor: AnyObject) {
        let box = Unmanaged.passRetained(Box(executor: ObjectIdentifier(executor), id: id))
        pthread_setspecific(key, box.toOpaque())
    }

    func get(of executor: AnyObject) -> Int? {
        guard let raw = pthread_getspecific(key) else { return nil }
        let box = Unmanaged<Box>.fromOpaque(raw).takeUnretainedValue()
        return box.executor == ObjectIdentifier(executor) ? box.id : nil
    }

    private final class Box {
        let executor: ObjectIdentifier
        let id: Int
        init(executor: ObjectIdentifier, id: Int) {
            self.executor = executor
            self.id = id
        }
    }
}
