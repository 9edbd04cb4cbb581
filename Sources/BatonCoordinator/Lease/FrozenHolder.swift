import BatonStore
import Foundation

/// What a waiter does about a lease holder frozen inside a write transaction: a process that
/// keeps SQLite's write lock while the kernel does not run it (stopped by SIGSTOP, or frozen by
/// its cgroup's freezer), so no takeover can commit and nobody can write.
///
/// Once the takeover has been held up by such a holder for ``bound``:
/// - ``Policy/wait``: the waiter keeps waiting and names the holder and the remedy (in its
///   status and log) until somebody resumes or kills it.
/// - ``Policy/thaw`` (the default): the waiter resumes the holder, `SIGCONT`, and `THAWED` for
///   its v1 freezer cgroup where this user may write it. The holder's transaction commits under
///   its own epoch (still the store's: the takeover has not committed), the takeover then
///   completes, and the thawed holder's next write fails its fence. Nothing is lost and nothing
///   is killed; this is what Android's freezer does for a frozen app that holds a file lock
///   another process waits on.
/// - ``Policy/kill``: the waiter kills the holder, `SIGKILL` (and thaws its freezer cgroup, so
///   the kill lands): its open transaction rolls back, as iOS ends a suspended app that holds a
///   lock in a shared container (0xdead10cc). What it had committed stays.
///
/// Either action is taken only on a process the kernel names as a holder of `D/writer.lock` and
/// of SQLite's WAL write lock (`/proc/locks`) and sees stopped or frozen, never on a pid read
/// from a file alone. A process
/// stopped by a debugger (traced, `t`) does not resume on `SIGCONT`: under `thaw` the wait goes
/// on and names it; under `kill` the debugged process is killed.
public struct FrozenHolder: Sendable, Hashable {
    /// What to do once the bound has passed.
    public enum Policy: String, Sendable, Hashable, CaseIterable {
        /// Name the holder and wait for somebody to act.
        case wait
        /// Resume it (`SIGCONT`, `THAWED` for its freezer cgroup); it is fenced afterwards.
        case thaw
        /// Kill it (`SIGKILL`); its open transaction rolls back.
        case kill
    }

    /// What to do.
    public var policy: Policy
    /// How long the holder must have been frozen (silent since its last heartbeat) while holding
    /// up a takeover before the policy acts (and between two acts).
    public var bound: Duration

    /// Makes a policy.
    public init(policy: Policy = .thaw, bound: Duration = .seconds(2)) {
        self.policy = policy
        self.bound = bound
    }

    /// The default: thaw after 2 s.
    public static let standard = FrozenHolder()

    /// Carries out the policy on `pid` if the kernel names it as a holder of the lock file at
    /// `lockPath` and, when the store's log index at `shmPath` can be looked at, as the holder
    /// of SQLite's WAL write lock (so a stopped writer is never acted on for a write
    /// transaction another process holds); returns what was done, as a phrase (nil: nothing).
    static func act(_ policy: Policy, on pid: Int32, lockPath: String, shmPath: String) -> String? {
        guard policy != .wait, pid > 0,
            let holders = LockHolders.current(at: lockPath), holders.contains(where: { $0.pid == pid }),
            LockHolders.walWriters(shmPath: shmPath)?.contains(pid) ?? true
        else { return nil }
        let cgroup = FreezerCgroup.of(pid)
        switch policy {
        case .wait:
            return nil
        case .thaw:
            kill(pid, SIGCONT)
            let thawed = cgroup?.thaw() ?? false
            let freezer = thawed ? ", and THAWED its freezer cgroup \(cgroup?.path ?? "")" : ""
            return "resumed it (SIGCONT\(freezer))"
        case .kill:
            kill(pid, SIGKILL)
            // A task frozen by the v1 freezer dies only once thawed.
            let thawed = cgroup?.thaw() ?? false
            return "killed it (SIGKILL" + (thawed ? ", and THAWED its freezer cgroup so it dies)" : ")")
                + "; its open transaction rolls back"
        }
    }
}

/// A process's cgroup under the v1 freezer (`/sys/fs/cgroup/freezer`).
struct FreezerCgroup: Sendable, Hashable {
    /// The cgroup's path below the freezer's mount (`/` for the root, which cannot be frozen).
    var path: String
    static let mount = "/sys/fs/cgroup/freezer"

    /// The freezer cgroup of `pid`, from `/proc/PID/cgroup` (nil: none, the root, or unreadable).
    static func of(_ pid: Int32) -> FreezerCgroup? {
        // Unreadable (no such process, no /proc): no cgroup to thaw.
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else {
            return nil
        }
        return parse(text)
    }

    /// The freezer line of a `/proc/PID/cgroup` text (`6:freezer:/some/group`).
    static func parse(_ text: String) -> FreezerCgroup? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("freezer") else { continue }
            let path = String(fields[2])
            return path == "/" || path.isEmpty ? nil : FreezerCgroup(path: path)
        }
        return nil
    }

    /// Writes `THAWED` to the cgroup's `freezer.state` when it is frozen (or freezing) and this
    /// user may write it; returns whether it did.
    func thaw() -> Bool {
        let state = Self.mount + path + "/freezer.state"
        // Unreadable: not a v1 freezer cgroup this process can see.
        guard let now = try? String(contentsOfFile: state, encoding: .utf8),
            now.hasPrefix("FROZEN") || now.hasPrefix("FREEZING")
        else { return false }
        let fd = open(state, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let word = Array("THAWED\n".utf8)
        return word.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == word.count
    }
}
