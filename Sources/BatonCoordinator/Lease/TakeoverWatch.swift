import BatonStore
import Foundation

/// What the kernel says a process is doing (`/proc/PID/stat`, third field).
public enum ProcessState: String, Sendable, Hashable, Codable {
    /// Running, runnable or sleeping: alive and scheduled.
    case running
    /// Stopped (`T`: SIGSTOP, a job-control stop) or stopped under a tracer (`t`), or frozen by
    /// the cgroup freezer (which reports it as sleeping on older kernels; see `frozen`).
    case stopped
    /// In uninterruptible sleep (`D`): hung on I/O, or frozen by the cgroup freezer v1.
    case hung
    /// Gone, or a zombie.
    case dead
    /// No `/proc` here, or not readable.
    case unknown

    /// Reads `/proc/PID/stat`.
    public static func of(_ pid: Int32) -> ProcessState {
        guard pid > 0 else { return .unknown }
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .dead : .unknown }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return .unknown }
        return parse(stat: String(decoding: buffer[0..<count], as: UTF8.self))
    }

    /// The state in a `/proc/PID/stat` line: the field after the command, which is in
    /// parentheses and may itself hold spaces and parentheses.
    public static func parse(stat line: String) -> ProcessState {
        guard let close = line.lastIndex(of: ")") else { return .unknown }
        let rest = line[line.index(after: close)...].drop { $0 == " " }
        switch rest.first {
        case "T", "t": return .stopped
        case "D": return .hung
        case "Z", "X", "x": return .dead
        case "R", "S", "I", "W", "P", "K": return .running
        default: return .unknown
        }
    }
}

/// Whether a waiter should take the writer lease over: fed what it sees of the holder (the lock
/// file's generation and heartbeat record, the holder's process state, the time), it answers
/// when to look again, or that the holder stopped renewing the lease for a full term.
///
/// Pure, so every rule is tested without processes:
/// - a record that keeps changing is a live holder, however long its pages take;
/// - no change for a full term (the holder's own, from its record) is a frozen or hung holder;
/// - the holder seen stopped by the kernel for a quarter term shortens that, never lengthens it;
/// - a new lock generation (a hand-over, a takeover by someone else) starts the count again.
public struct TakeoverWatch: Sendable {
    /// What the waiter saw at one moment.
    public struct Observation: Sendable, Hashable {
        /// The lock file the path names now (nil when there is none).
        public var generation: FileIdentity?
        /// Its heartbeat record, when it parses.
        public var record: HeartbeatRecord?
        /// The lock file's raw content (any change of it counts as a beat).
        public var content: String
        /// The record's holder's process state.
        public var holderState: ProcessState
        /// `CLOCK_MONOTONIC` nanoseconds.
        public var now: UInt64

        /// Makes an observation from what the waiter saw.
        public init(
            generation: FileIdentity?, record: HeartbeatRecord?, content: String, holderState: ProcessState,
            now: UInt64
        ) {
            self.generation = generation
            self.record = record
            self.content = content
            self.holderState = holderState
            self.now = now
        }
    }

    /// What ``observe(_:)`` answers.
    public enum Decision: Sendable, Hashable {
        /// Look again at this time (`CLOCK_MONOTONIC` nanoseconds) at the latest.
        case wait(until: UInt64)
        /// The holder has not renewed the lease for `silentNanos`: take it over.
        case takeOver(silentNanos: UInt64)
    }

    /// The term used when the record does not say (this waiter's own).
    public let defaultTerm: UInt64
    private var seen: (generation: FileIdentity?, content: String)?
    private var lastChange: UInt64 = 0
    private var stoppedSince: UInt64?

    /// Makes a watch that has seen nothing yet, using `defaultTerm` when a record gives no term.
    public init(defaultTerm: Duration) {
        self.defaultTerm = UInt64(max(0, defaultTerm.inNanoseconds))
    }

    /// Takes in what the waiter sees now and answers when to look again, or to take over: once
    /// the lock file and its content have not changed for a full term, or the holder has been
    /// seen stopped for a quarter term.
    public mutating func observe(_ observation: Observation) -> Decision {
        let now = observation.now
        let term = observation.record.map { UInt64($0.termMillis) * 1_000_000 } ?? defaultTerm
        let quarter = max(term / 4, 1_000_000)
        guard observation.generation != nil else {
            // No lock file: whoever creates it takes it in the kernel.
            seen = nil
            stoppedSince = nil
            return .wait(until: now + quarter)
        }
        if seen?.generation != observation.generation || seen?.content != observation.content {
            seen = (observation.generation, observation.content)
            // A beat newer than the first sight of it dates the change (a holder found already
            // silent is taken over sooner); one from the future or long gone does not.
            if let beat = observation.record?.beat, beat <= now, now - beat < term {
                lastChange = beat
            } else {
                lastChange = now
            }
            stoppedSince = nil
        }
        if observation.holderState == .stopped {
            stoppedSince = stoppedSince ?? now
        } else {
            stoppedSince = nil
        }
        var due = lastChange + term
        if let stoppedSince { due = min(due, stoppedSince + quarter) }
        if now >= due { return .takeOver(silentNanos: now - lastChange) }
        return .wait(until: min(due, now + quarter))
    }
}
