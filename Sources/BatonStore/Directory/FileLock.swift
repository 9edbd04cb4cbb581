import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An advisory `flock` on a small lock file of its own (never the database file: closing any
/// descriptor of the database would drop SQLite's POSIX locks).
///
/// The descriptor is opened with `O_CLOEXEC`, so child processes never inherit the lock, and the
/// kernel frees the lock when the holder dies.
public final class FileLock: Sendable {
    private let fd: Int32
    /// True until the descriptor is closed; makes `unlock()` idempotent across threads.
    private let isOpen = Mutex(true)
    /// The lock file's path.
    public let path: String

    /// Opens (creating with mode 0600) the lock file. Does not lock.
    public init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw StoreError(
                .directoryUnavailable,
                "cannot open lock file \(path): \(String(cString: strerror(errno))); check the directory's permissions"
            )
        }
        self.fd = fd
        self.path = path
    }

    deinit {
        if takeOpen() { close(fd) }
    }

    /// Blocks until the exclusive lock is held.
    public func lock() throws {
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw StoreError(
                .directoryUnavailable, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Takes the exclusive lock if it is free; returns false at once if someone else holds it.
    public func tryLock() throws -> Bool {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw StoreError(
                .directoryUnavailable, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    /// Releases the lock and closes the descriptor. Safe to call more than once.
    public func unlock() {
        if takeOpen() { close(fd) }
    }

    private func takeOpen() -> Bool {
        isOpen.withLock { open in
            defer { open = false }
            return open
        }
    }
}
