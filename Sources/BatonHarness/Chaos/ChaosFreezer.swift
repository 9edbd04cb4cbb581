import Foundation

/// How a chaos run freezes a writer inside a write transaction.
public enum ChaosFreezer: String, Sendable, CaseIterable {
    /// SIGSTOP (the writer stops itself inside the transaction).
    case sigstop
    /// The v1 cgroup freezer: the writer, stopped inside the transaction, is moved into a freezer
    /// cgroup of its own that is frozen, then sent SIGCONT.
    case cgroup

    /// Where the v1 freezer is mounted.
    public static let mount = "/sys/fs/cgroup/freezer"

    /// Whether this user may make and freeze cgroups under ``mount``.
    public static var isAvailable: Bool { access(mount, W_OK) == 0 }

    /// A freezer cgroup a chaos run made for one process.
    public struct Cgroup: Sendable {
        /// Its directory under ``ChaosFreezer/mount``.
        public let path: String

        /// Makes a cgroup for `pid`, moves the whole process into it (`cgroup.procs`) and
        /// freezes it.
        public static func freeze(_ pid: Int32) throws -> Cgroup {
            let cgroup = Cgroup(path: ChaosFreezer.mount + "/baton-chaos-\(pid)")
            if mkdir(cgroup.path, 0o755) != 0, errno != EEXIST {
                throw CLIError(message: "cannot make \(cgroup.path): \(String(cString: strerror(errno)))")
            }
            try cgroup.write("\(pid)", to: "cgroup.procs")
            try cgroup.write("FROZEN", to: "freezer.state")
            return cgroup
        }

        /// Thaws it (a process in it runs again, or dies of a pending SIGKILL).
        public func thaw() {
            // Gone already (the process left, the directory was removed): nothing to thaw.
            try? write("THAWED", to: "freezer.state")
        }

        /// Thaws it, moves `pid` back to the root cgroup if it is still alive, and removes it.
        public func release(_ pid: Int32) {
            thaw()
            // A process that died has left the cgroup already.
            try? Cgroup(path: ChaosFreezer.mount).write("\(pid)", to: "cgroup.procs")
            rmdir(path)
        }

        private func write(_ word: String, to file: String) throws {
            let target = path + "/" + file
            let fd = open(target, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw CLIError(message: "cannot open \(target): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            let bytes = Array((word + "\n").utf8)
            guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
                throw CLIError(
                    message: "cannot write \(word) to \(target): \(String(cString: strerror(errno)))")
            }
        }
    }
}
