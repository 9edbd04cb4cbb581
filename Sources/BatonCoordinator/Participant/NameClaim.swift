import BatonStore
import Foundation
import Logging

/// A participant's claim on its name: `D/participants/<name>.lock`, locked for the process's
/// lifetime (the kernel frees it when the process dies), with the process's pid in it. One live
/// process per name.
struct NameClaim: Sendable {
    let name: String
    let directory: SharedDirectory
    private(set) var lock: FileLock

    /// Checks `name` and takes it in `directory`.
    ///
    /// - Throws: `nameInUse`, naming the pid, when a live process holds the name; the name's
    ///   own error when it is not a valid participant name.
    init(_ name: String, in directory: SharedDirectory) throws {
        try ParticipantName.validate(name)
        try directory.ensureSubdirectory(directory.participantsPath)
        self.name = name
        self.directory = directory
        lock = try Self.take(name, in: directory)
    }

    private static func take(_ name: String, in directory: SharedDirectory) throws -> FileLock {
        let path = directory.participantsPath + "/\(name).lock"
        let lock = try FileLock(path: path, in: directory)
        guard try lock.tryLock() else {
            throw CoordinatorError(
                .nameInUse,
                inUse(
                    name, in: directory, recorded: lock.recorded(),
                    holders: lock.identity.flatMap { LockHolders.current(of: $0) }))
        }
        lock.record("\(getpid())\n")
        return lock
    }

    /// Why `name` cannot be taken: "participant 'host' is already running (pid 123) in D; …",
    /// with the pid of the process that holds the name's lock file as the kernel says
    /// (`holders`, from `/proc/locks`), and its command when the file's content (`recorded`,
    /// the pid its Baton holder wrote) names another or none. With no holder from the kernel, the
    /// recorded pid.
    static func inUse(
        _ name: String, in directory: SharedDirectory, recorded: String?, holders: [LockHolder]?
    ) -> String {
        let recordedPid = recorded.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let holder: String
        if let first = holders?.first, let pid = first.knownPid {
            holder =
                pid == recordedPid
                ? "pid \(pid)"
                : "\(first.description), though its lock file records \(recordedPid.map { "pid \($0)" } ?? "no pid")"
        } else if let first = holders?.first {
            holder = first.description
        } else {
            holder = recordedPid.map { "pid \($0)" } ?? "pid unknown"
        }
        return
            "participant '\(name)' is already running (\(holder)) in \(directory.path); stop it first or choose another --name"
    }

    /// After a rescan: if `participants/` was deleted or its lock file replaced, takes the name
    /// again (logging when another process got it first). Returns whether it had to.
    mutating func reclaim(log: ParticipantLog, logger: Logger) -> Bool {
        guard !lock.isStillAtPath else { return false }
        do {
            try directory.ensureSubdirectory(directory.participantsPath)
            let fresh = try Self.take(name, in: directory)
            lock.unlock()
            lock = fresh
            log.log("name.reclaimed")
        } catch {
            log.log("name.lost", ["error": .string(String(describing: error))])
            logger.error(
                "could not take this participant's name again", metadata: ["baton.error": "\(error)"])
        }
        return true
    }
}
