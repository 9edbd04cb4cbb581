import BatonLocking

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
    /// The device and inode of the file the descriptor was opened on (nil if `fstat` failed).
    private let openedIdentity: FileIdentity?
    /// True until the descriptor is closed; makes `unlock()` idempotent across threads.
    private let isOpen = Locked(true)
    private let currentPath: Locked<String>
    /// The lock file's path (where ``rename(to:)`` last put it).
    public var path: String { currentPath.withLock { $0 } }

    /// Opens (creating with mode 0600) the lock file `path` in `directory`, following no
    /// symbolic link. Does not lock.
    public init(path: String, in directory: SharedDirectory) throws {
        let fd = directory.openFile(path, O_RDWR | O_CREAT, mode: 0o600)
        guard fd >= 0 else {
            let code = errno
            throw StoreError(
                code == ELOOP ? .unsafeDirectory : .directoryUnavailable,
                "cannot open lock file \(SharedDirectory.describeOpenFailure(path, errno: code))"
                    + (code == ELOOP ? "" : "; check the directory's permissions"))
        }
        self.fd = fd
        self.currentPath = Locked(path)
        var opened = stat()
        openedIdentity =
            fstat(fd, &opened) == 0
            ? FileIdentity(device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino)) : nil
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

    /// Takes the exclusive lock, waiting at most `timeout` for whoever holds it to let go
    /// (trying again after 1 ms, then twice as long each time, up to 20 ms between tries).
    ///
    /// - Throws: ``StoreError`` with code `busy` once `timeout` has passed, naming the path and
    ///   the holder as `/proc/locks` says (its pid and command line).
    public func lock(timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        while try !tryLock() {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                let holders = identity.flatMap { LockHolders.current(of: $0) }
                let seconds = (timeout.inMilliseconds / 100).rounded() / 10
                throw StoreError(
                    .busy,
                    "\(path) is \(LockHolders.heldBy(holders)), which did not let it go within \(seconds)s; stop that process or wait for it and try again"
                )
            }
            let nanos = min(pause, left).inNanoseconds
            var wait = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
            // A signal that cuts the pause short only makes the next try come sooner.
            _ = nanosleep(&wait, nil)
            pause = min(pause * 2, .milliseconds(20))
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

    /// Replaces the lock file's content with `text` (the holder's pid, say), for whoever finds
    /// the lock taken.
    public func record(_ text: String) {
        let bytes = Array(text.utf8)
        _ = ftruncate(fd, 0)
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    /// Writes `text` over the start of the lock file without truncating it first, so a reader
    /// never finds it empty: one `pwrite`, for records of a fixed length (a heartbeat).
    public func overwrite(_ text: String) {
        overwrite(Array(text.utf8))
    }

    /// Writes `bytes` over the start of the lock file, as the text form does.
    public func overwrite(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { overwrite($0) }
    }

    /// Writes `bytes` over the start of the lock file, as the text form does.
    public func overwrite(_ bytes: UnsafeRawBufferPointer) {
        _ = pwrite(fd, bytes.baseAddress, bytes.count, 0)
    }

    /// The device and inode of the file this lock holds (its generation), or nil once closed.
    public var identity: FileIdentity? {
        isOpen.withLock { $0 } ? openedIdentity : nil
    }

    /// What this lock's file says (see ``record(_:)``), at most 256 bytes; nil when empty.
    public func recorded() -> String? {
        recordedBytes().map { String(decoding: $0, as: UTF8.self) }
    }

    /// ``recorded()``'s bytes, undecoded.
    public func recordedBytes() -> [UInt8]? {
        Self.readRecord(from: fd)
    }

    /// Calls `body` with ``recordedBytes()`` read into a buffer on the stack (a new holder reads
    /// the last record on every turn); nil when the file is empty or unreadable.
    public func withRecordedBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T?) rethrows -> T? {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer in
            let count = pread(fd, buffer.baseAddress, buffer.count, 0)
            guard count > 0 else { return nil }
            return try body(UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// What the lock file at `path` says (see ``record(_:)``), at most 256 bytes.
    public static func recorded(at path: String) -> String? {
        recordedBytes(at: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// ``recorded(at:)``'s bytes, undecoded.
    public static func recordedBytes(at path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readRecord(from: fd)
    }

    /// The first 256 bytes of `fd`'s file (one `pread` at offset 0); nil when empty or unreadable.
    private static func readRecord(from fd: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        buffer.removeLast(buffer.count - count)
        return buffer
    }

    /// Whether `path` still names the file this lock holds (not deleted, renamed or replaced).
    ///
    /// One `lstat`: the open descriptor keeps its inode alive, so no other file can have the same
    /// device and inode while it is open, and a path naming them names this file.
    public var isStillAtPath: Bool {
        guard let openedIdentity, isOpen.withLock({ $0 }) else { return false }
        return FileIdentity.of(path) == openedIdentity
    }

    /// Renames the lock file to `newPath` (atomically replacing whatever is there).
    public func rename(to newPath: String) throws {
        let oldPath = path
        guard systemRename(oldPath, newPath) == 0 else {
            throw StoreError(
                .directoryUnavailable,
                "cannot rename \(oldPath) to \(newPath): \(String(cString: strerror(errno)))")
        }
        currentPath.withLock { $0 = newPath }
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

/// A file's device and inode: which file a path named at some moment (a lock file's
/// generation).
public struct FileIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The device the file is on (`st_dev`).
    public var device: UInt64
    /// The file's inode number on that device (`st_ino`).
    public var inode: UInt64

    /// Makes the identity of the file with this device and inode.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The file `path` names now (not following a symbolic link), or nil when there is none.
    public static func of(_ path: String) -> FileIdentity? {
        var named = stat()
        guard lstat(path, &named) == 0 else { return nil }
        return FileIdentity(device: UInt64(named.st_dev), inode: UInt64(named.st_ino))
    }

    public var description: String { "\(device):\(inode)" }
}

/// `rename(2)`, callable where a method of the same name hides it.
private func systemRename(_ old: String, _ new: String) -> Int32 {
    rename(old, new)
}
