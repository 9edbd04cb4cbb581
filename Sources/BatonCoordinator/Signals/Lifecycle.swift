import BatonStore
import Foundation

/// A participant's lifecycle as its signal file says: `foreground` or `background`.
public enum Lifecycle: String, Sendable, Hashable, CaseIterable, Codable {
    /// In front: the participant asks for the writer lease and runs its syncs once it holds it.
    case foreground
    /// Behind: the participant stops its syncs and lets the writer lease go.
    case background
}

/// Reads and writes `D/lifecycle/<name>`, the level-triggered signal a shell or `baton signal`
/// sets. Reading is defensive: no symlinks (`O_NOFOLLOW`), regular files only, at most
/// ``maxSize`` bytes; anything else is a typed error, never a crash.
public enum LifecycleSignal {
    /// The largest signal file read.
    public static let maxSize = 256

    /// The outcome of reading one signal file.
    public enum Reading: Sendable, Hashable {
        /// The file holds this lifecycle.
        case valid(Lifecycle)
        /// No file (yet).
        case missing
        /// Empty (or only white space): refused like junk, logged and published; a writer still
        /// mid-way (`echo x > file` truncates first) is read again on its next event.
        case empty
        /// Anything else; the reason is for the log (never the content).
        case invalid(String)
    }

    /// Reads `D/lifecycle/<name>`.
    public static func read(directory: SharedDirectory, name: String) -> Reading {
        readFile(at: directory.lifecyclePath + "/" + name, in: directory)
    }

    static func readFile(at path: String, in directory: SharedDirectory) -> Reading {
        let fd = directory.openFile(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .missing
            case ELOOP: return .invalid("is a symbolic link, or lies under one")
            default: return .invalid("cannot be opened (\(String(cString: strerror(errno))))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .invalid("is not a regular file")
        }
        guard info.st_size <= maxSize else { return .invalid("is \(info.st_size) bytes (limit \(maxSize))") }
        var buffer = [UInt8](repeating: 0, count: maxSize + 1)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else { return .invalid("cannot be read") }
        return parse(buffer[0..<count])
    }

    /// What a signal file's content says: one word, any case, surrounded by any white space.
    package static func parse(_ content: some Collection<UInt8>) -> Reading {
        guard content.count <= maxSize else { return .invalid("is larger than \(maxSize) bytes") }
        let text = String(decoding: content, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return .empty }
        guard let lifecycle = Lifecycle(rawValue: text.lowercased()) else {
            return .invalid("holds neither 'foreground' nor 'background'")
        }
        return .valid(lifecycle)
    }

    /// Writes the signal atomically (temporary file + rename), as `baton signal` does.
    ///
    /// - Throws: `invalidName` for a bad participant name; `io` when the directory is unusable.
    public static func write(_ lifecycle: Lifecycle, directory: SharedDirectory, name: String) throws {
        try ParticipantName.validate(name)
        try directory.ensureSubdirectory(directory.lifecyclePath)
        try AtomicFile.write(
            Data((lifecycle.rawValue + "\n").utf8), to: directory.lifecyclePath + "/" + name, in: directory)
    }
}

extension LifecycleSignal {
    /// Writes the signal only if there is none yet, atomically (a shell's signal written at the
    /// same moment is never overwritten). Returns whether it wrote.
    @discardableResult
    public static func writeIfAbsent(
        _ lifecycle: Lifecycle, directory: SharedDirectory, name: String
    ) throws -> Bool {
        try ParticipantName.validate(name)
        try directory.ensureSubdirectory(directory.lifecyclePath)
        let path = directory.lifecyclePath + "/" + name
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try AtomicFile.write(Data((lifecycle.rawValue + "\n").utf8), to: temporary, in: directory)
        defer { directory.unlinkFile(temporary) }
        // link() fails with EEXIST instead of replacing: the no-clobber form of rename.
        if directory.linkFile(temporary, to: path) == 0 { return true }
        if errno == EEXIST { return false }
        throw CoordinatorError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
    }
}

/// Participant names: `[A-Za-z0-9._-]{1,64}`.
public enum ParticipantName {
    /// Throws `invalidName` unless `name` is 1-64 of A-Z a-z 0-9 . _ - and does not start with '.'.
    public static func validate(_ name: String) throws {
        guard Names.isValid(name), !name.hasPrefix(".") else {
            throw CoordinatorError(
                .invalidName,
                "invalid participant name '\(name.prefix(80))'; use 1-64 of A-Z a-z 0-9 . _ - (not starting with '.')"
            )
        }
    }
}

/// Files replaced atomically: written to a temporary sibling, then renamed over the target.
public enum AtomicFile {
    /// Writes `data` to a new temporary sibling of `path` (mode 0600), a file in `directory`, and
    /// renames it over `path`, following no symbolic link in `directory` (a link at `path` is
    /// replaced, never written through).
    ///
    /// - Throws: `io` when the file cannot be written or replaced.
    public static func write(_ data: Data, to path: String, in directory: SharedDirectory) throws {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = directory.openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        guard fd >= 0 else {
            throw CoordinatorError(
                .io, "cannot write \(SharedDirectory.describeOpenFailure(path, errno: errno))")
        }
        let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count, directory.renameFile(temporary, to: path) == 0 else {
            let code = errno
            directory.unlinkFile(temporary)
            throw CoordinatorError(
                .io, "cannot replace \(SharedDirectory.describeOpenFailure(path, errno: code))")
        }
    }

    /// Reads a small file in `directory` without following symlinks; `nil` when missing,
    /// unreadable or too big.
    public static func read(_ path: String, maxSize: Int, in directory: SharedDirectory) -> Data? {
        let fd = directory.openFile(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= maxSize else {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 0, count <= maxSize else { return nil }
        return Data(buffer[0..<count])
    }
}
