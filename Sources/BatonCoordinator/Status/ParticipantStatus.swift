import BatonStore
import Foundation

/// What a participant stands in for: the app, or one of its extensions.
public enum ParticipantRole: String, Sendable, Hashable, CaseIterable, Codable {
    /// The app itself (lease priority 100 by default).
    case host
    /// One of the app's extensions, `extension` in files (lease priority 10 by default).
    case appExtension = "extension"

    /// The lease priority a role gets unless told otherwise: the host wins.
    public var defaultPriority: Int { self == .host ? 100 : 10 }
}

/// A configured sync that failed and will be run again.
public struct SyncRetry: Sendable, Hashable, Codable {
    /// The sync's name.
    public var name: String
    /// Failures in a row so far.
    public var attempt: Int
    /// Why the last attempt failed.
    public var lastError: String
    /// When the next attempt starts (ms since 1970).
    public var nextAttempt: Int64

    /// Makes a retry entry from its fields.
    public init(name: String, attempt: Int, lastError: String, nextAttempt: Int64) {
        self.name = name
        self.attempt = attempt
        self.lastError = lastError
        self.nextAttempt = nextAttempt
    }
}

/// Lifecycle input a participant refused: its lifecycle file is empty, holds neither
/// `foreground` nor `background`, is a symlink, not a regular file, or too big. The lifecycle
/// stays as it was; the refusal is published until the file holds a valid signal again or is
/// removed.
public struct RefusedSignal: Sendable, Hashable, Codable {
    /// Why, as said of the file (`is empty`, `holds neither 'foreground' nor 'background'`);
    /// never its content.
    public var reason: String
    /// When it was first refused (ms since 1970); the same refusal read again keeps this time.
    public var at: Int64

    /// Makes a refusal from its fields.
    public init(reason: String, at: Int64) {
        self.reason = reason
        self.at = at
    }
}

/// A participant's published state, `D/participants/<name>.json` (replaced atomically).
public struct ParticipantStatus: Sendable, Hashable, Codable {
    /// Whether it is the app or an extension.
    public var role: ParticipantRole
    /// The participant's name.
    public var name: String
    /// Higher wins the lease when several are foreground.
    public var priority: Int
    /// Its process id.
    public var pid: Int32
    /// What its lifecycle signal says.
    public var lifecycle: Lifecycle
    /// Its hand-over phase.
    public var phase: ParticipantPhase
    /// The lease epoch it holds, when writer.
    public var epoch: Int64?
    /// Its sync manager's state.
    public var managerState: String
    /// When it was published (ms since 1970).
    public var updated: Int64
    /// What keeps it from doing its work right now, in one sentence (a store it cannot write,
    /// a lease it could not record), or nil.
    public var problem: String?
    /// Its configured syncs that failed and wait for their next attempt (or are in it), by name.
    public var retrying: [SyncRetry]
    /// What its lifecycle file holds that it refused, while it does; nil when the file holds a
    /// valid signal (or none).
    public var refusedSignal: RefusedSignal?

    /// Whether it holds the writer lease (its phase is `writer`).
    public var isWriter: Bool { phase == .writer }
    /// Whether it is foreground and waiting for the lease.
    public var isWaiting: Bool { phase == .waitingForLease }

    /// Whether its process still exists.
    public var isAlive: Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Makes a status from its fields.
    public init(
        role: ParticipantRole, name: String, priority: Int, pid: Int32, lifecycle: Lifecycle,
        phase: ParticipantPhase,
        epoch: Int64?,
        managerState: String, updated: Int64, problem: String? = nil, retrying: [SyncRetry] = [],
        refusedSignal: RefusedSignal? = nil
    ) {
        self.retrying = retrying
        self.refusedSignal = refusedSignal
        self.role = role
        self.name = name
        self.priority = priority
        self.pid = pid
        self.lifecycle = lifecycle
        self.phase = phase
        self.epoch = epoch
        self.managerState = managerState
        self.updated = updated
        self.problem = problem
    }

    /// Writes `D/participants/<name>.json`.
    public func publish(in directory: SharedDirectory) throws {
        try directory.ensureSubdirectory(directory.participantsPath)
        try AtomicFile.write(
            try JSONEncoder().encode(self), to: directory.participantsPath + "/\(name).json", in: directory)
    }

    /// At most this many status files are read per look at `participants/`, however many
    /// files are there.
    public static let maxStatusFiles = 256

    /// Whether `file` in `participants/` may be a participant's status: `<name>.json` for a valid
    /// name whose `<name>.lock` exists (every participant takes one). Junk costs one `stat`.
    public static func isStatusFile(_ file: String, in directory: SharedDirectory) -> Bool {
        guard file.hasSuffix(".json") else { return false }
        let name = String(file.dropLast(5))
        // An invalid name is junk in the directory: not a status file.
        guard (try? ParticipantName.validate(name)) != nil else { return false }
        return access(directory.participantsPath + "/\(name).lock", F_OK) == 0
    }

    /// Every readable status file of a participant that took its name (`<name>.lock` exists,
    /// alive or not); junk, oversize files and symlinks are skipped. At most
    /// ``maxStatusFiles`` are read, and other files in the directory cost only their directory
    /// entry, so junk there never slows a look at it.
    public static func readAll(in directory: SharedDirectory) -> [ParticipantStatus] {
        lockedNames(in: directory.participantsPath).prefix(maxStatusFiles).compactMap { name in
            // Anything that is not a status this version writes (an unknown role or phase
            // included) is skipped like junk.
            guard
                let data = AtomicFile.read(
                    directory.participantsPath + "/\(name).json", maxSize: 64 * 1024, in: directory)
            else { return nil }
            return parse(data, name: name)
        }
    }

    /// The status in `data`, the content of `participants/<name>.json`, or nil when it is not a
    /// status this version writes for that name: not JSON, an unknown role or phase, another
    /// participant's name, or a pid of zero or less (`kill(0 or -1, 0)` would report a whole
    /// process group alive).
    public static func parse(_ data: Data, name: String) -> ParticipantStatus? {
        // Junk or a torn write is no status (nil), as documented above.
        guard let status = try? JSONDecoder().decode(ParticipantStatus.self, from: data),
            status.name == name, status.pid > 0
        else { return nil }
        return status
    }

    /// The valid names `N` with a `N.lock` in `path`, sorted. Reads the directory with
    /// `readdir` and turns only `.lock` entries into strings.
    static func lockedNames(in path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple -> String? in
                tuple.withMemoryRebound(to: CChar.self, capacity: 256) { chars in
                    let length = strlen(chars)
                    guard length > 5, memcmp(chars + length - 5, ".lock", 5) == 0 else { return nil }
                    return String(
                        decoding: UnsafeRawBufferPointer(start: chars, count: length - 5), as: UTF8.self)
                }
            }
            if let name, Names.isValid(name), !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}
