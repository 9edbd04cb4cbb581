#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The shared directory `D` that participants agree on, with the paths of its files (see
/// docs/coordinator.md, "The shared directory").
///
/// Creating one makes the directory (mode 0700) when it is missing and refuses one that another
/// user owns or that anyone may write to: a lifecycle file planted by another user must never
/// steer a participant.
public struct SharedDirectory: Sendable, Hashable {
    /// The directory's path as given.
    public let path: String

    /// Validates (and if needed creates) the directory.
    ///
    /// - Throws: ``StoreError`` with code `unsafeDirectory` for a world-writable or foreign-owned
    ///   directory or a non-directory, `directoryUnavailable` when it cannot be created.
    public init(path: String, create: Bool = true) throws {
        guard !path.isEmpty else {
            throw StoreError(.directoryUnavailable, "the shared directory path is empty; pass --dir DIR")
        }
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        try Self.prepare(self.path, create: create)
    }

    /// `D/store.sqlite`.
    public var storePath: String { path + "/store.sqlite" }
    /// `D/store.sqlite` with every symbolic link in D's own path resolved, as SQLite names the
    /// file it opened (D itself may be a link; nothing below it may).
    public var resolvedStorePath: String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let directory = String(cString: resolved)
        return (directory == "/" ? "" : directory) + "/store.sqlite"
    }
    /// `D/setup.lock`, held while opening and migrating the store.
    public var setupLockPath: String { path + "/setup.lock" }
    /// `D/writer.lock`, the writer lease.
    public var writerLockPath: String { path + "/writer.lock" }
    /// `D/lifecycle`, one file per participant holding `foreground` or `background`.
    public var lifecyclePath: String { path + "/lifecycle" }
    /// `D/participants`, each participant's published state.
    public var participantsPath: String { path + "/participants" }
    /// `D/logs`, each participant's JSON-lines log.
    public var logsPath: String { path + "/logs" }
    /// `D/changes`, the change doorbell.
    public var changesPath: String { path + "/changes" }

    /// Creates a subdirectory (mode 0700) if it is missing.
    ///
    /// - Throws: ``StoreError`` with code `unsafeDirectory` when something other than a directory
    ///   is there (a symbolic link included: Baton follows no link in D).
    public func ensureSubdirectory(_ subpath: String) throws {
        try Self.makeDirectory(subpath)
        var info = stat()
        guard lstat(subpath, &info) == 0 else {
            throw StoreError(
                .directoryUnavailable, "cannot read \(subpath): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(
                .unsafeDirectory,
                (info.st_mode & S_IFMT) == S_IFLNK
                    ? Self.describeOpenFailure(subpath, errno: ELOOP)
                    : "\(subpath) is not a directory; remove it")
        }
    }

    static func prepare(_ path: String, create: Bool) throws {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT, create else {
                throw StoreError(
                    .directoryUnavailable,
                    errno == ENOENT
                        ? "no shared directory at \(path) (start a participant there, or baton store init, first; or pass the right --dir)"
                        : "shared directory \(path) is not accessible: \(String(cString: strerror(errno)))")
            }
            try makeParents(of: path)
            try makeDirectory(path)
            guard stat(path, &info) == 0 else {
                throw StoreError(
                    .directoryUnavailable, "cannot read shared directory \(path) after creating it")
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.unsafeDirectory, "\(path) is not a directory; pass a directory with --dir")
        }
        guard info.st_uid == geteuid() else {
            throw StoreError(
                .unsafeDirectory,
                "shared directory \(path) is owned by uid \(info.st_uid), not by you (uid \(geteuid())); use a directory you own"
            )
        }
        guard info.st_mode & S_IWOTH == 0 else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            throw StoreError(
                .unsafeDirectory,
                "shared directory \(path) is world-writable (mode \(mode)); run `chmod o-w \(path)` or use another directory"
            )
        }
    }

    static func makeParents(of path: String) throws {
        var components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        var prefix = path.hasPrefix("/") ? "" : "."
        if components.first == "" { components = components.dropFirst() }
        for component in components where !component.isEmpty {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                throw StoreError(
                    .directoryUnavailable,
                    "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw StoreError(
                .directoryUnavailable, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }
}
