import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a thread of its own named `name`, which runs `body` and ends with it.
///
/// The kernel gets the name too (`ps -L`, `top -H`, `perf`, a debugger show it): Foundation's
/// `Thread.name` is not passed on on Linux, so such a thread shows the name of the one that
/// started it (`...default-qos` for a thread started from the cooperative pool). Linux keeps at
/// most 15 bytes of a name.
public func startThread(named name: StaticString, _ body: @escaping @Sendable () -> Void) {
    precondition(name.utf8CodeUnitCount <= 15, "a thread name the kernel keeps is at most 15 bytes")
    let thread = Thread {
        #if canImport(Glibc)
            // What `pthread_setname_np` does for the calling thread (Swift's Glibc does not
            // import it); a thread left unnamed still runs.
            let comm = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if comm >= 0 {
                _ = name.withUTF8Buffer { write(comm, $0.baseAddress, $0.count) }
                close(comm)
            }
        #endif
        body()
    }
    thread.name = name.description
    thread.start()
}
