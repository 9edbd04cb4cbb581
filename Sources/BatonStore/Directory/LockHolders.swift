#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A process's lock on a file, as `/proc/locks` shows it.
public struct LockHolder: Sendable, Hashable, CustomStringConvertible {
    /// Which call took the lock.
    public enum Kind: String, Sendable, Hashable {
        /// `flock(2)` (Baton's own lock files; the `flock` command).
        case flock = "FLOCK"
        /// A process-associated `fcntl` or `lockf` lock (SQLite's).
        case posix = "POSIX"
        /// An open file description lock (`F_OFD_SETLK`): the kernel names no process.
        case openFileDescription = "OFDLCK"
    }

    /// Shared or exclusive.
    public enum Access: String, Sendable, Hashable {
        /// A shared lock (`LOCK_SH`, `F_RDLCK`).
        case read = "READ"
        /// An exclusive lock (`LOCK_EX`, `F_WRLCK`).
        case write = "WRITE"
    }

    /// The process id `/proc/locks` gives: -1 for an open file description lock, which belongs
    /// to no process.
    public var pid: Int32
    /// Which call took the lock.
    public var kind: Kind
    /// Shared or exclusive.
    public var access: Access
    /// The holder's command line (its `comm` when the command line is empty), when it was read.
    public var command: String?

    /// Makes a holder from its fields.
    public init(pid: Int32, kind: Kind, access: Access, command: String? = nil) {
        self.pid = pid
        self.kind = kind
        self.access = access
        self.command = command
    }

    /// The holder's process id, when the kernel names one.
    public var knownPid: Int32? { pid > 0 ? pid : nil }

    /// "pid 1234 (flock D/setup.lock sleep 30)", "pid 1234" when its command was not read, or,
    /// for an open file description lock, what it is.
    public var description: String {
        guard let knownPid else { return "an open file description lock (the kernel names no process)" }
        guard let command, !command.isEmpty else { return "pid \(knownPid)" }
        return "pid \(knownPid) (\(command))"
    }
}

/// Who holds a lock on a file, from the text of `/proc/locks`: one pure parser (``parse(_:device:inode:)``),
/// and the reading of the kernel's files around it.
public enum LockHolders {
    /// The holders of the file with `device` (as `st_dev` gives it) and `inode` in `text`, the
    /// content of `/proc/locks`, in the order listed; waiters (lines with `->`), leases and lines
    /// that do not parse are left out.
    ///
    /// A line reads `ID: KIND MODE ACCESS PID MAJ:MIN:INODE START END`, with the device's major
    /// and minor numbers in hexadecimal and the inode in decimal, as in
    /// `5: FLOCK  ADVISORY  WRITE 1721 fe:00:16220936 0 EOF`.
    public static func parse(_ text: String, device: UInt64, inode: UInt64) -> [LockHolder] {
        locks(in: text, device: device, inode: inode).map {
            LockHolder(pid: $0.pid, kind: $0.kind, access: $0.access)
        }
    }

    /// One lock of `/proc/locks`: its holder, and the byte range it covers (`end` nil: to EOF).
    struct Lock {
        var pid: Int32
        var kind: LockHolder.Kind
        var access: LockHolder.Access
        var start: UInt64?
        var end: UInt64?
    }

    /// The locks held (not waited for) on the file with `device` and `inode`, in order.
    static func locks(in text: String, device: UInt64, inode: UInt64) -> [Lock] {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        var locks: [Lock] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 6, fields[0].hasSuffix(":"),
                !fields.contains(where: { $0.hasPrefix("->") }),
                let kind = LockHolder.Kind(rawValue: String(fields[1])),
                let access = LockHolder.Access(rawValue: String(fields[3])),
                let pid = Int32(fields[4])
            else { continue }
            let place = fields[5].split(separator: ":", omittingEmptySubsequences: false)
            guard place.count == 3, UInt64(place[0], radix: 16) == major,
                UInt64(place[1], radix: 16) == minor,
                UInt64(place[2]) == inode
            else { continue }
            // An end that is neither a number nor EOF: a line this reader does not know.
            let end = fields.count > 7 ? UInt64(fields[7]) : nil
            if fields.count > 7, end == nil, fields[7] != "EOF" { continue }
            locks.append(
                Lock(
                    pid: pid, kind: kind, access: access, start: fields.count > 6 ? UInt64(fields[6]) : nil,
                    end: end))
        }
        return locks
    }

    /// The processes holding a process-associated (`POSIX`) write lock on a range that covers
    /// `byte` of the file with `device` and `inode`, in `text` (the content of `/proc/locks`):
    /// for SQLite's log index (`-shm`), byte 120 is the WAL write lock, held by the one
    /// connection in a write transaction.
    public static func posixWriters(covering byte: UInt64, in text: String, device: UInt64, inode: UInt64)
        -> [Int32]
    {
        locks(in: text, device: device, inode: inode).filter { lock in
            guard lock.kind == .posix, lock.access == .write, let start = lock.start, start <= byte else {
                return false
            }
            return lock.end.map { $0 >= byte } ?? true
        }.map(\.pid)
    }

    /// The byte of SQLite's log index (`-shm`) whose write lock is the WAL write lock
    /// (`UNIX_SHM_BASE`, `(22 + SQLITE_SHM_NLOCK) * 4`, plus `WAL_WRITE_LOCK`, 0).
    public static let walWriteLockByte: UInt64 = 120

    /// The processes holding SQLite's WAL write lock on the store whose log index is at
    /// `shmPath`, now; nil when there is no such file or `/proc/locks` cannot be read.
    public static func walWriters(shmPath: String) -> [Int32]? {
        guard let identity = FileIdentity.of(shmPath), let bytes = readAll("/proc/locks") else { return nil }
        return posixWriters(
            covering: walWriteLockByte, in: String(decoding: bytes, as: UTF8.self), device: identity.device,
            inode: identity.inode)
    }

    /// A process's command as `/proc/PID/cmdline` (arguments separated by NUL bytes) and
    /// `/proc/PID/comm` give it: the command line with spaces, cut at 160 characters, else the
    /// `comm` name; nil when neither says anything.
    public static func command(cmdline: [UInt8]?, comm: String?) -> String? {
        var arguments = cmdline ?? []
        while arguments.last == 0 { arguments.removeLast() }
        if !arguments.isEmpty {
            let text = String(decoding: arguments.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            return text.count > 160 ? String(text.prefix(159)) + "…" : text
        }
        let name = comm?.split(separator: "\n").first.map(String.init)
        return name?.isEmpty == false ? name : nil
    }

    /// "held by pid 1234 (flock D/setup.lock sleep 30)" (several joined with "and"), or, when
    /// `holders` is empty or nil, that `/proc/locks` named nobody.
    public static func heldBy(_ holders: [LockHolder]?) -> String {
        guard let holders, !holders.isEmpty else {
            return holders == nil
                ? "held by another process (/proc/locks could not be read to name it)"
                : "held by another process (/proc/locks names none: it may have just let go)"
        }
        return "held by " + holders.map(\.description).joined(separator: " and ")
    }
}

extension LockHolders {
    /// The holders of the file `identity` names, now, with their commands; nil when
    /// `/proc/locks` cannot be read (no `/proc` here).
    public static func current(of identity: FileIdentity) -> [LockHolder]? {
        guard let bytes = readAll("/proc/locks") else { return nil }
        return parse(String(decoding: bytes, as: UTF8.self), device: identity.device, inode: identity.inode)
            .map { holder in
                var holder = holder
                if let pid = holder.knownPid {
                    holder.command = command(
                        cmdline: readAll("/proc/\(pid)/cmdline"),
                        comm: readAll("/proc/\(pid)/comm").map { String(decoding: $0, as: UTF8.self) })
                }
                return holder
            }
    }

    /// The holders of the file at `path` now (see ``current(of:)``); nil when there is no file
    /// there or `/proc/locks` cannot be read.
    public static func current(at path: String) -> [LockHolder]? {
        FileIdentity.of(path).flatMap { current(of: $0) }
    }

    /// A whole file of `/proc` (whose size `stat` does not give), up to 4 MiB; nil when it
    /// cannot be opened.
    static func readAll(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < 4 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return bytes
    }
}
