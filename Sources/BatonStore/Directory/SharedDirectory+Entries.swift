#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Files in D are reached without following a symbolic link at any component below D: a link
// planted at `D/writer.lock`, `D/logs` or `D/participants/host.json` is refused, never written
// through (see docs/hardening.md). D itself may be a link: it is the path the user chose.
extension SharedDirectory {
    /// `open(2)` of `path`, a file in D, following no symbolic link below D: each subdirectory
    /// on the way is opened with `O_DIRECTORY | O_NOFOLLOW`, the file with `O_NOFOLLOW`. A path
    /// outside D is opened with `O_NOFOLLOW` alone.
    ///
    /// - Returns: the descriptor (close-on-exec), or -1 with `errno` set (`ELOOP`: a link on the
    ///   way; see ``describeOpenFailure(_:errno:)``).
    public func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0o600) -> Int32 {
        inParent(of: path) { parent, name in openat(parent, name, flags | O_NOFOLLOW | O_CLOEXEC, mode) }
    }

    /// `rename(2)` of one file in D over another, following no link below D (a link at `to`
    /// itself is replaced, as `rename(2)` does, never written through).
    public func renameFile(_ from: String, to: String) -> Int32 {
        inParent(of: from) { fromParent, fromName in
            inParent(of: to) { toParent, toName in renameat(fromParent, fromName, toParent, toName) }
        }
    }

    /// `link(2)` without replacing: fails with `EEXIST` when `to` exists (a link there included).
    public func linkFile(_ from: String, to: String) -> Int32 {
        inParent(of: from) { fromParent, fromName in
            inParent(of: to) { toParent, toName in linkat(fromParent, fromName, toParent, toName, 0) }
        }
    }

    /// `unlink(2)` of a file in D, following no link below D.
    @discardableResult
    public func unlinkFile(_ path: String) -> Int32 {
        inParent(of: path) { parent, name in unlinkat(parent, name, 0) }
    }

    /// Why opening `path` failed, for an error message: a link is named as one.
    public static func describeOpenFailure(_ path: String, errno code: Int32) -> String {
        code == ELOOP
            ? "\(path) is a symbolic link, or lies under one; Baton follows no link in the shared directory (remove it)"
            : "\(path): \(String(cString: strerror(code)))"
    }

    /// Calls `body` with a descriptor of the directory holding `path` and the file's name in it,
    /// that directory reached from D without following a link; -1 with `errno` when it cannot be.
    private func inParent(of path: String, _ body: (Int32, String) -> Int32) -> Int32 {
        let prefix = self.path == "/" ? "/" : self.path + "/"
        var components: [Substring]
        var current: Int32
        if path.hasPrefix(prefix), !path.dropFirst(prefix.count).isEmpty {
            components = path.dropFirst(prefix.count).split(separator: "/")
            current = components.count > 1 ? open(self.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1
        } else {
            // Outside D: the caller's own path, its last component not followed.
            let slash = path.lastIndex(of: "/")
            let parent = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
            components = [slash.map { path[path.index(after: $0)...] } ?? Substring(path)]
            current = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard let name = components.popLast() else { return -1 }
        // A file at D's top: its last component alone can be a link, and O_NOFOLLOW covers it.
        if components.isEmpty, path.hasPrefix(prefix) { return body(AT_FDCWD, path) }
        guard current >= 0 else { return -1 }
        for component in components {
            let next = openat(current, String(component), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            closeKeepingErrno(current)
            guard next >= 0 else { return -1 }
            current = next
        }
        let result = body(current, String(name))
        closeKeepingErrno(current)
        return result
    }
}

/// `close(2)` that leaves `errno` as it was (the caller reports an earlier failure).
private func closeKeepingErrno(_ fd: Int32) {
    let saved = errno
    close(fd)
    errno = saved
}
