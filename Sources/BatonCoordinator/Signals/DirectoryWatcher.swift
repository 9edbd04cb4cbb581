import BatonLocking
import Foundation

/// Watches a shared directory and some of its subdirectories with the kernel's inotify API
/// (`inotify_init1(IN_NONBLOCK | IN_CLOEXEC)` and `poll`), surfaced as an `AsyncStream`.
///
/// Events are hints: consumers re-read the files they care about (the signals are
/// level-triggered). In a subdirectory, a file created empty is reported when its writer closes
/// it (or a rename brings it in), not at its creation: `echo foreground > file` is read once
/// written. A subdirectory that is a symbolic link is not watched (`IN_DONT_FOLLOW`). A queue overflow, or a subdirectory deleted or recreated, yields
/// ``Event/rescan(_:)``: the watcher re-watches and the consumer re-reads everything.
///
/// ```swift
/// for await event in try DirectoryWatcher(root: "/tmp/d", subdirectories: ["lifecycle"]).events() { … }
/// ```
public struct DirectoryWatcher: Sendable {
    /// What the watcher reports.
    public enum Event: Sendable, Hashable {
        /// Something happened to `name` in `directory` (`""` for the root).
        case changed(directory: String, name: String)
        /// Re-read everything: events may have been lost.
        case rescan(String)
    }

    /// The directory watched.
    public let root: String
    /// The subdirectories of ``root`` also watched, by name.
    public let subdirectories: [String]
    /// Also report writes to files still open (appends to a log). Off for signal files, whose
    /// writers are only done when they close the file.
    public let reportsModifications: Bool
    /// Report files in the root only when they are created, moved or deleted, not each time a
    /// writer closes them (a lock file every process opens and closes would wake every watcher).
    public let rootNamesOnly: Bool

    /// Makes a watcher of `root` and its `subdirectories`; nothing is watched until ``events()``.
    public init(
        root: String, subdirectories: [String], reportsModifications: Bool = false,
        rootNamesOnly: Bool = false
    ) {
        self.root = root
        self.subdirectories = subdirectories
        self.reportsModifications = reportsModifications
        self.rootNamesOnly = rootNamesOnly
    }

    /// Waits until `condition` holds, re-checking it on every event that `relevant` accepts
    /// (never polling); false once `timeout` has passed since the call (the checks' own time
    /// included). The watch starts before the first check, so no change is missed. A check that touches the watched directories itself (opening the store
    /// touches files in the root) must leave its own events out with `relevant`, or it would
    /// wake itself.
    public func wait(
        timeout: Duration, relevant: @escaping @Sendable (Event) -> Bool = { _ in true },
        until condition: @escaping @Sendable () -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        let events = try events()
        if condition() { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events where relevant(event) && condition() { return true }
                return false
            }
            group.addTask {
                // Cancelled when the read wins the race: nothing to report.
                try? await Task.sleep(until: deadline, clock: .continuous)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Starts watching. The stream ends when its consumer stops iterating (or the root goes away
    /// for good); the watching thread then closes its descriptors.
    ///
    /// - Throws: `watchFailed` when inotify is unavailable or the root cannot be watched.
    public func events() throws -> AsyncStream<Event> {
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else {
            throw CoordinatorError(.watchFailed, "inotify_init1 failed: \(String(cString: strerror(errno)))")
        }
        var pipeFds: [Int32] = [0, 0]
        // The wake-up pipe ends the poll when the consumer goes away (pipe2 is not exported to
        // Swift, so the flags are set right after).
        guard pipe(&pipeFds) == 0 else {
            close(inotify)
            throw CoordinatorError(.watchFailed, "pipe failed: \(String(cString: strerror(errno)))")
        }
        for fd in pipeFds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let loop = WatchLoop(
            inotify: inotify, wakeRead: pipeFds[0], root: root, subdirectories: subdirectories,
            extraMask: reportsModifications ? UInt32(IN_MODIFY) : 0,
            rootMask: rootNamesOnly ? WatchLoop.rootMask & ~UInt32(IN_CLOSE_WRITE) : WatchLoop.rootMask)
        guard loop.watchRoot() else {
            close(inotify)
            close(pipeFds[0])
            close(pipeFds[1])
            throw CoordinatorError(.watchFailed, "cannot watch \(root): \(String(cString: strerror(errno)))")
        }
        loop.watchSubdirectories()
        let (stream, continuation) = AsyncStream.makeStream(
            of: Event.self, bufferingPolicy: .bufferingNewest(4096))
        let wakeWrite = pipeFds[1]
        continuation.onTermination = { _ in
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        startThread(named: "baton.inotify") {
            loop.run(continuation)
            close(wakeWrite)
        }
        return stream
    }
}

/// The watching thread's state. Touched only by that thread after `events()` returns.
private final class WatchLoop: @unchecked Sendable {
    static let rootMask = UInt32(
        IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR)
    static let subMask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ATTRIB | IN_ONLYDIR | IN_DONT_FOLLOW)

    let inotify: Int32
    let wakeRead: Int32
    let root: String
    let subdirectories: [String]
    let extraMask: UInt32
    let rootMask: UInt32
    var rootWatch: Int32 = -1
    var watches: [Int32: String] = [:]

    init(
        inotify: Int32, wakeRead: Int32, root: String, subdirectories: [String], extraMask: UInt32,
        rootMask: UInt32
    ) {
        self.inotify = inotify
        self.wakeRead = wakeRead
        self.root = root
        self.subdirectories = subdirectories
        self.extraMask = extraMask
        self.rootMask = rootMask
    }

    func watchRoot() -> Bool {
        rootWatch = inotify_add_watch(inotify, root, rootMask)
        return rootWatch >= 0
    }

    func watchSubdirectories() {
        for sub in subdirectories where !watches.values.contains(sub) {
            let wd = inotify_add_watch(inotify, root + "/" + sub, Self.subMask | extraMask)
            if wd >= 0 { watches[wd] = sub }
        }
    }

    func run(_ continuation: AsyncStream<DirectoryWatcher.Event>.Continuation) {
        defer {
            close(inotify)
            close(wakeRead)
            continuation.finish()
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var fds = [
                pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count < 0, errno == EAGAIN || errno == EINTR { continue }
                return
            }
            var offset = 0
            while offset + 16 <= count {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                    (
                        raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                        raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset += 16 + length
                if !handle(wd: wd, mask: mask, name: name, continuation) { return }
            }
        }
    }

    /// Whether `path` is an empty regular file (not following a link): one just created by a
    /// writer that has not written yet (`echo foreground > file` creates it, then writes). Its
    /// close (`IN_CLOSE_WRITE`) is reported instead, so a reader never sees it half made.
    private func isEmptyFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size == 0
    }

    /// Returns false when watching must end.
    func handle(
        wd: Int32, mask: UInt32, name: String,
        _ continuation: AsyncStream<DirectoryWatcher.Event>.Continuation
    ) -> Bool {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            watchSubdirectories()
            continuation.yield(.rescan("inotify queue overflow"))
            return true
        }
        if wd == rootWatch {
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                continuation.yield(.rescan("the shared directory was removed"))
                return false
            }
            if subdirectories.contains(name) {
                if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    watchSubdirectories()
                    continuation.yield(.rescan("\(name)/ was recreated"))
                } else if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                    watches = watches.filter { $0.value != name }
                    continuation.yield(.rescan("\(name)/ was deleted"))
                }
                return true
            }
            continuation.yield(.changed(directory: "", name: name))
            return true
        }
        guard let sub = watches[wd] else { return true }
        if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
            watches[wd] = nil
            // It may already be back (deleted and recreated between two reads).
            watchSubdirectories()
            continuation.yield(.rescan("\(sub)/ went away"))
            return true
        }
        if name.isEmpty {
            // The directory's own mode changed (`chmod 000`, then back): what was written while
            // it could not be read is read afresh.
            if mask & UInt32(IN_ATTRIB) != 0 { continuation.yield(.rescan("\(sub)/ permissions changed")) }
            return true
        }
        if mask & UInt32(IN_ATTRIB) != 0 { return true }
        if mask & UInt32(IN_CREATE) != 0, isEmptyFile(root + "/" + sub + "/" + name) { return true }
        continuation.yield(.changed(directory: sub, name: name))
        return true
    }
}
