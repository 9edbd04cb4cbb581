import BatonStore

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

    /// ``line``'s bytes.
    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// Calls `body` with ``bytes``, built in a buffer on the stack: written on every beat,
    /// every take and every release of the lease, so the record is built byte by byte, with no
    /// string interpolation, Foundation padding or array.
    public func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        // The longest record (every number at its widest) is 212 bytes.
        try withUnsafeTemporaryAllocation(byteCount: 256, alignment: 1) { buffer in
            var count = 0
            func append(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func text(_ string: StaticString) {
                string.withUTF8Buffer { for byte in $0 { append(byte) } }
            }
            func number<N: BinaryInteger>(_ value: N) {
                if value < 0 { append(UInt8(ascii: "-")) }
                // Least significant digit first, then turned around in place.
                let first = count
                var magnitude = value.magnitude
                repeat {
                    append(UInt8(ascii: "0") + UInt8(magnitude % 10))
                    magnitude /= 10
                } while magnitude > 0
                var (low, high) = (first, count - 1)
                while low < high {
                    buffer.swapAt(low, high)
                    (low, high) = (low + 1, high - 1)
                }
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
                append(UInt8(ascii: ":"))
                number(closing.at)
                append(UInt8(ascii: ":"))
                append(closing.kind.letter.asciiValue ?? UInt8(ascii: "-"))
            } else {
                append(UInt8(ascii: "-"))
            }
            while count < Self.length - 1 { append(UInt8(ascii: " ")) }
            append(UInt8(ascii: "\n"))
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
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

    /// Parses bytes read into a buffer, as ``init(parsing:)-([UInt8])`` does.
    public init?(parsing bytes: UnsafeBufferPointer<UInt8>) {
        guard let parsed = Self.parse(bytes) else { return nil }
        self = parsed
    }

    /// Parses the eight fields in order, field by field (a new holder parses the last record on
    /// every turn: nothing is allocated).
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> HeartbeatRecord? {
        typealias Field = Slice<UnsafeBufferPointer<UInt8>>
        func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
        }
        var cursor = 0
        /// The next whitespace-separated field, nil when there is none.
        func field() -> Field? {
            while cursor < bytes.count, isSpace(bytes[cursor]) { cursor += 1 }
            guard cursor < bytes.count else { return nil }
            let start = cursor
            while cursor < bytes.count, !isSpace(bytes[cursor]) { cursor += 1 }
            return bytes[start..<cursor]
        }
        /// The value of the next field, `key=value`; nil when there is none or its key is not `key`.
        func value(_ key: StaticString) -> Field? {
            guard let field = field() else { return nil }
            var position = field.startIndex
            let matches = key.withUTF8Buffer { key in
                for expected in key {
                    guard position < field.endIndex, field[position] == expected else { return false }
                    position += 1
                }
                return true
            }
            guard matches, position < field.endIndex, field[position] == UInt8(ascii: "=") else { return nil }
            return field[(position + 1)...]
        }
        func integer(_ digits: Field?) -> Int64? {
            digits.flatMap { Self.decimal($0) }
        }
        guard let head = field(), head.elementsEqual("baton-lease".utf8),
            let pid = integer(value("pid")).flatMap({ Int32(exactly: $0) }),
            let epoch = integer(value("epoch")),
            let beat = value("beat").flatMap({ Self.decimal($0) as UInt64? }),
            let term = integer(value("term")),
            let from = integer(value("from")),
            let released = integer(value("released")),
            let close = value("close"),
            field() == nil,
            pid > 0, term > 0
        else { return nil }
        var closing: LeaseClosing?
        if !close.elementsEqual("-".utf8) {
            // EPOCH:MS:LETTER, exactly three parts.
            guard let first = close.firstIndex(of: UInt8(ascii: ":")),
                let second = close[(first + 1)...].firstIndex(of: UInt8(ascii: ":")),
                close[(second + 1)...].count == 1,
                let closed = integer(close[..<first]), let at = integer(close[(first + 1)..<second]),
                let kind = LeaseClosing.Kind(ascii: close[second + 1])
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
        // A renewal that never wrote (made by an earlier build's bounded lease) was no turn of its
        // own: the renewed holding ended when its holder let go (or, when it died holding, when
        // the next holder records it).
        if closing.kind == .renewed {
            return released > 0 ? LeaseClosing(epoch: storeEpoch, at: released, kind: .released) : nil
        }
        // A holder that never wrote passes on what it inherited.
        return closing
    }
}
