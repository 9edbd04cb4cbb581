import BatonLocking
import Foundation

/// Timeouts for the waits of one writer lease: a thread of its own that sleeps until the earliest
/// deadline set and calls what is due.
///
/// Every contended turn of the lease sets a timeout and, almost always, cancels it when the
/// kernel grants the lock first. A dispatch timer would wake dispatch's timer thread to arm each
/// one (a thread switch per turn). This clock is woken only by a deadline earlier than the one it
/// sleeps until; a later one, or a cancellation, just waits for the clock's next wake-up, which
/// comes at most at the deadline it already had.
final class LeaseClock: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.

    private let condition = MonotonicCondition()
    private var timers: [Int: (deadline: ContinuousClock.Instant, action: @Sendable () -> Void)] = [:]
    private var nextID = 0
    /// What the thread sleeps until: nil while it sleeps with nothing set (or is not started).
    private var sleepingUntil: ContinuousClock.Instant?
    private var isRunning = false
    private var isStopped = false

    /// Calls `action` (on the clock's thread) at `deadline`, unless cancelled first.
    ///
    /// - Returns: what ``cancel(_:)`` takes.
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let id = nextID
        nextID += 1
        timers[id] = (deadline, action)
        if !isRunning {
            isRunning = true
            startThread(named: "baton.clock") { [self] in run() }
        } else if sleepingUntil.map({ deadline < $0 }) ?? true {
            condition.signal()
        }
        return id
    }

    /// Forgets a timeout that has not fired (nothing when it has).
    func cancel(_ id: Int) {
        condition.lock()
        defer { condition.unlock() }
        timers[id] = nil
    }

    /// Ends the thread (timeouts not yet due never fire).
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        isStopped = true
        timers = [:]
        condition.signal()
    }

    private func run() {
        condition.lock()
        while !isStopped {
            let now = ContinuousClock.now
            let due = timers.filter { $0.value.deadline <= now }
            if !due.isEmpty {
                for id in due.keys { timers[id] = nil }
                condition.unlock()
                for timer in due.values { timer.action() }
                condition.lock()
                continue
            }
            let earliest = timers.values.map(\.deadline).min()
            sleepingUntil = earliest
            condition.wait(for: earliest.map { $0 - now })
            sleepingUntil = nil
        }
        condition.unlock()
    }
}

/// A mutex and a condition variable whose timed waits run on `CLOCK_MONOTONIC`, so a change of
/// the wall clock never stretches or cuts a timeout.
final class MonotonicCondition: @unchecked Sendable {
    // @unchecked: the pthread objects are made for use from any thread.

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    func signal() { pthread_cond_signal(cond) }

    /// Waits (the mutex held) until signalled, or `timeout` passed (forever when nil).
    func wait(for timeout: Duration?) {
        guard let timeout else {
            pthread_cond_wait(cond, mutex)
            return
        }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanos = max(0, timeout.inNanoseconds) + Int64(now.tv_nsec)
        var until = timespec()
        until.tv_sec = now.tv_sec + Int(nanos / 1_000_000_000)
        until.tv_nsec = Int(nanos % 1_000_000_000)
        pthread_cond_timedwait(cond, mutex, &until)
    }
}
