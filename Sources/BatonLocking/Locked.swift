import CThreadSanitizer
import Synchronization

/// A value behind a `Synchronization.Mutex`, that ThreadSanitizer can see.
///
/// On Linux `Mutex` hands a contended lock over inside the kernel (a priority-inheriting futex),
/// where ThreadSanitizer cannot see it, so two accesses made under the lock by different threads
/// are reported as a data race. `Locked` tells ThreadSanitizer about each acquire and release;
/// outside a `-sanitize=thread` build the two calls do nothing. Every lock in Baton is one.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
public final class Locked<Value: ~Copyable>: Sendable {
    private let mutex: Mutex<Value>

    /// A lock around `initialValue`.
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = Unmanaged.passUnretained(self).toOpaque()
            baton_tsan_acquire(address)
            defer { baton_tsan_release(address) }
            return try body(&value)
        }
    }
}
