import BatonLocking
import BatonStore
import Foundation

/// What the lease holder writes into its lock file, renewed every quarter term: who holds it,
/// under which epoch, when it last beat (`CLOCK_MONOTONIC`, shared by every process of the
/// machine), and the term it promises to beat within. On release it writes when it let go; the
/// next holder's first write records that in the lease history, so a turn of the lease costs
/// no transaction of its own.
///
/// Always ``length`` bytes, written with one `pwrite` over the last one, so a reader never
/// finds the file empty or half written in practice; a record that does not parse is treated
/// as unknown, never as proof of life or of death.
public struct HeartbeatRecord: Sendable, Hashable {
    /// The record's size in bytes, newline included.
    public static let length = 224

    /// The holder's process id.
    public var pid: Int32
    /// The holding's epoch. It is in the store's history once its first write committed.
    public var epoch: Int64
    /// `CLOCK_MONOTONIC` nanoseconds.
    public var beat: UInt64
    /// The term the holder promises to beat within, in milliseconds.
    public var termMillis: Int64
    /// The epoch this holder took over from a silent holder (0 when it took a free lock): the
    /// old holder, woken, tells a takeover from a deleted lock file by it.
    public var takenOver: Int64
    /// When the holder let go (ms since 1970); 0 while held (or when it died holding).
    public var released: Int64
    /// How the interval before this holding ends, carried until this holding's first write
    /// records it (a holder that never writes passes it on to the next).
    public var closing: LeaseClosing?

    /// Makes a record from its fields (by default not taken over, not released, and with no closing).
    public init(
        pid: Int32, epoch: Int64, beat: UInt64, termMillis: Int64, takenOver: Int64 = 0, released: Int64 = 0,
        closing: LeaseClosing? = nil
    ) {
        self.pid = pid
        self.epoch = epoch
        self.beat = beat
        self.termMillis = termMillis
        self.takenOver = takenOver
        self.released = released
        self.closing = closing
    }

    /// The fixed-length line: `baton-lease pid=… epoch=… beat=… term=… from=… released=…
    /// close=EPOCH:MS:r|t|n|-`, padded with spaces.
    public var line: String { String(decoding: bytes, as: UTF8.self) }

    /// ``line``'s bytes. Written on every beat, every take and every release of the lease, so
    /// it is built byte by byte, without string interpolation or Foundation's padding.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.length)
        func text(_ string: StaticString) {
            string.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func number<T: BinaryInteger>(_ value: T) {
            if value < 0 { out.append(UInt8(ascii: "-")) }
            // Least significant digit first, then turned around in place (no array per number).
            let first = out.count
            var magnitude = value.magnitude
            repeat {
                out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
                magnitude /= 10
            } while magnitude > 0
            out[first...].reverse()
        }
        text("baton-lease pid=")
        number(pid)
        text(" epoch=")
        number(epoch)
        text(" beat=")
        number(beat)
        text(" term=")
        number(termMillis)
        text(" from=")
        number(takenOver)
        text(" released=")
        number(released)
        text(" close=")
        if let closing {
            number(closing.epoch)
            out.append(UInt8(ascii: ":"))
            number(closing.at)
            out.append(UInt8(ascii: ":"))
            out.append(closing.kind.letter.asciiValue ?? UInt8(ascii: "-"))
        } else {
            out.append(UInt8(ascii: "-"))
        }
        if out.count < Self.length - 1 {
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: Self.length - 1 - out.count))
        }
        out.append(UInt8(ascii: "\n"))
        return out
    }

    /// Parses ``line``; nil for anything else (an empty file, a pid written by an older Baton).
    public init?(parsing text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    /// Parses ``bytes``, as ``init(parsing:)-(String)`` parses the line: read by every new holder
    /// and at every look at the holder, so it works on the bytes read, without decoding a string.
    public init?(parsing bytes: [UInt8]) {
        guard let parsed = bytes.withUnsafeBufferPointer({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> HeartbeatRecord? {
        var fields: [Slice<UnsafeBufferPointer<UInt8>>] = []
        fields.reserveCapacity(8)
        var start: Int?
        for index in 0...bytes.count {
            let isSpace: Bool
            if index == bytes.count {
                isSpace = true
            } else {
                switch bytes[index] {
                case 0x20, 0x0A, 0x09, 0x0D: isSpace = true
                default: isSpace = false
                }
            }
            if isSpace, let begun = start {
                guard fields.count < 8 else { return nil }
                fields.append(bytes[begun..<index])
                start = nil
            } else if !isSpace, start == nil {
                start = index
            }
        }
        guard fields.count == 8, fields[0].elementsEqual("baton-lease".utf8) else { return nil }
        /// The value of `key=value` in field `index`, nil when the key is not `key`.
        func value(_ index: Int, _ key: String) -> Slice<UnsafeBufferPointer<UInt8>>? {
            let field = fields[index]
            var keyBytes = key.utf8.makeIterator()
            var position = field.startIndex
            while let expected = keyBytes.next() {
                guard position < field.endIndex, field[position] == expected else { return nil }
                position += 1
            }
            guard position < field.endIndex, field[position] == UInt8(ascii: "=") else { return nil }
            return field[(position + 1)...]
        }
        func integer(_ digits: Slice<UnsafeBufferPointer<UInt8>>?) -> Int64? {
            digits.flatMap { Self.decimal($0) }
        }
        guard let pid = integer(value(1, "pid")).flatMap({ Int32(exactly: $0) }),
            let epoch = integer(value(2, "epoch")),
            let beat = value(3, "beat").flatMap({ Self.decimal($0) as UInt64? }),
            let term = integer(value(4, "term")),
            let from = integer(value(5, "from")),
            let released = integer(value(6, "released")),
            let close = value(7, "close"),
            pid > 0, term > 0
        else { return nil }
        var closing: LeaseClosing?
        if !close.elementsEqual("-".utf8) {
            let parts = close.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            guard parts.count == 3, let closed = integer(parts[0]), let at = integer(parts[1]),
                parts[2].count == 1,
                let kind = LeaseClosing.Kind(letter: Character(UnicodeScalar(parts[2].first!)))
            else { return nil }
            closing = LeaseClosing(epoch: closed, at: at, kind: kind)
        }
        return HeartbeatRecord(
            pid: pid, epoch: epoch, beat: beat, termMillis: term, takenOver: from, released: released,
            closing: closing)
    }

    /// A decimal integer as `T(_ text:)` reads one (an optional sign, then digits), straight
    /// from the bytes; nil when it is not one, or does not fit.
    private static func decimal<T: FixedWidthInteger>(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> T? {
        var position = bytes.startIndex
        var negative = false
        if position < bytes.endIndex,
            bytes[position] == UInt8(ascii: "-") || bytes[position] == UInt8(ascii: "+")
        {
            negative = bytes[position] == UInt8(ascii: "-")
            position += 1
        }
        guard position < bytes.endIndex else { return nil }
        var value: T = 0
        while position < bytes.endIndex {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative
                ? times10.subtractingReportingOverflow(T(digit)) : times10.addingReportingOverflow(T(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            position += 1
        }
        return value
    }

    /// The record in the lock file at `path`, nil when there is none or it does not parse.
    public static func read(at path: String) -> HeartbeatRecord? {
        FileLock.recordedBytes(at: path).flatMap { HeartbeatRecord(parsing: $0) }
    }

    /// How the interval of `storeEpoch` (the store's current epoch, whose holder wrote this
    /// record or passed it on) ends, as far as this record knows: nil while it is still held or
    /// when the record does not say.
    public func closing(of storeEpoch: Int64) -> LeaseClosing? {
        if epoch == storeEpoch {
            return released > 0 ? LeaseClosing(epoch: epoch, at: released, kind: .released) : nil
        }
        guard epoch > storeEpoch, let closing, closing.epoch == storeEpoch else { return nil }
        // A renewal that never wrote was no turn of its own: the renewed holding ended when its
        // holder let go (or, when it died holding, when the next holder records it).
        if closing.kind == .renewed {
            return released > 0 ? LeaseClosing(epoch: storeEpoch, at: released, kind: .released) : nil
        }
        // A holder that never wrote passes on what it inherited.
        return closing
    }
}

/// The holder's heartbeat: a thread of its own (never a task, which could starve behind a busy
/// cooperative pool) that rewrites the held lock file's ``HeartbeatRecord`` every quarter term,
/// and checks on each beat that the lock file is still the one it holds. When it is not (a
/// takeover replaced it, or somebody deleted it), it calls `onLost` once and stops beating.
///
/// One thread per lease, kept across holdings (a turn of the lease spawns nothing); it sleeps
/// while nothing is held. A frozen process (SIGSTOP, the cgroup freezer) stops beating with all
/// its threads: that is what lets a waiter take the lease over.
final class LeaseHeartbeat: Sendable {
    private struct Holding {
        var lock: FileLock
        var epoch: Int64
        var takenOver: Int64
        var closing: LeaseClosing?
    }

    private struct State {
        var holding: Holding?
        var started = false
        /// The thread waits with no timeout (nothing held): a new holding must wake it.
        var idle = false
        var closed = false
    }

    private let term: Duration
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let onLost: @Sendable () -> Void

    init(term: Duration, onLost: @escaping @Sendable () -> Void) {
        self.term = term
        self.onLost = onLost
    }

    /// Ends the thread (the lease that owns it is going away).
    func close() {
        state.withLock {
            $0.closed = true
            $0.holding = nil
        }
        wake.signal()
    }

    /// Starts beating into `lock` (the first beat now).
    ///
    /// - Parameters:
    ///   - takenOver: the epoch this holding takes over, when it does.
    ///   - closing: how the interval before this holding ends, carried in the record until the
    ///     holding's first write records it.
    func hold(_ lock: FileLock, epoch: Int64, takenOver: Int64 = 0, closing: LeaseClosing? = nil) {
        let (start, signal) = state.withLock { state -> (Bool, Bool) in
            state.holding = Holding(lock: lock, epoch: epoch, takenOver: takenOver, closing: closing)
            defer {
                state.started = true
                state.idle = false
            }
            return (!state.started, state.idle)
        }
        beat()
        if start {
            // Until ``close()``, which the owning lease calls when it goes away.
            let thread = Thread { [self] in
                while runOnce() {}
            }
            thread.name = "baton.lease.heartbeat"
            thread.start()
        } else if signal {
            // A thread already beating every quarter term needs no wake-up (a contended turn of
            // the lease costs no thread switch).
            wake.signal()
        }
    }

    /// Goes on beating into the same lock for the next epoch of a renewed holding (its
    /// takeover mark kept: a woken old holder still reads who took it over).
    func renew(epoch: Int64, closing: LeaseClosing) {
        state.withLock { state in
            guard var holding = state.holding else { return }
            holding.epoch = epoch
            holding.closing = closing
            state.holding = holding
            holding.lock.overwrite(record(holding).bytes)
        }
    }

    /// Stops beating (the lease is being released); no beat starts after this returns.
    ///
    /// - Parameters:
    ///   - released: when given, the last record says the lease was let go then (ms since 1970),
    ///     for the next holder to record.
    ///   - passing: when given, the closing the last record passes on (nil: none), in place of
    ///     the one the holding was given.
    func drop(released: Int64? = nil, passing: LeaseClosing?? = nil) {
        state.withLock { state in
            if let released, var holding = state.holding {
                if let passing { holding.closing = passing }
                holding.lock.overwrite(record(holding, released: released).bytes)
            }
            state.holding = nil
        }
    }

    var termMillis: Int64 {
        term.inWholeMilliseconds
    }

    private func record(_ holding: Holding, released: Int64 = 0) -> HeartbeatRecord {
        HeartbeatRecord(
            pid: getpid(), epoch: holding.epoch, beat: MonotonicClock.nanos(), termMillis: termMillis,
            takenOver: holding.takenOver, released: released, closing: holding.closing)
    }

    private func beat() {
        // Under the mutex, so a beat never lands after `drop()` returned.
        state.withLock { state in
            guard let holding = state.holding else { return }
            holding.lock.overwrite(record(holding).bytes)
        }
    }

    /// One quarter term of the thread's life; false once the lease is gone.
    private func runOnce() -> Bool {
        let idle = state.withLock { state -> Bool in
            state.idle = state.holding == nil
            return state.idle
        }
        if idle {
            wake.wait()
        } else {
            _ = wake.wait(timeout: .now() + .milliseconds(Int(max(1, termMillis / 4))))
        }
        let (closed, holding) = state.withLock { ($0.closed, $0.holding) }
        if closed { return false }
        guard let holding else { return true }
        guard holding.lock.isStillAtPath else {
            let lost = state.withLock { state -> Bool in
                guard state.holding?.lock === holding.lock else { return false }
                state.holding = nil
                return true
            }
            if lost { onLost() }
            return true
        }
        beat()
        return true
    }
}
