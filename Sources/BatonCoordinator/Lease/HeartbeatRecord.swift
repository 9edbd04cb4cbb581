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
    public var line: String {
        let close = closing.map { "\($0.epoch):\($0.at):\($0.kind.letter)" } ?? "-"
        let text =
            "baton-lease pid=\(pid) epoch=\(epoch) beat=\(beat) term=\(termMillis) from=\(takenOver) released=\(released) close=\(close)"
        return text + String(repeating: " ", count: max(0, Self.length - 1 - text.utf8.count)) + "\n"
    }

    /// ``line``'s bytes.
    public var bytes: [UInt8] { Array(line.utf8) }

    /// Calls `body` with ``bytes``.
    public func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes(body)
    }

    /// Parses ``line``; nil for anything else (an empty file, a pid written by an older Baton).
    public init?(parsing text: String) {
        guard let parsed = Self.parse(text.utf8) else { return nil }
        self = parsed
    }

    /// Parses ``bytes``, as ``init(parsing:)-(String)`` parses the line.
    public init?(parsing bytes: [UInt8]) {
        guard let parsed = Self.parse(bytes) else { return nil }
        self = parsed
    }

    /// Parses bytes read into a buffer, as ``init(parsing:)-([UInt8])`` does.
    public init?(parsing bytes: UnsafeBufferPointer<UInt8>) {
        guard let parsed = Self.parse(bytes) else { return nil }
        self = parsed
    }

    /// Parses the eight whitespace-separated fields, in order.
    private static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> HeartbeatRecord? {
        let fields = bytes.split { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
            .map { String(decoding: $0, as: UTF8.self) }
        let keys = ["pid", "epoch", "beat", "term", "from", "released", "close"]
        guard fields.count == 8, fields[0] == "baton-lease" else { return nil }
        var values: [String] = []
        for (key, field) in zip(keys, fields.dropFirst()) {
            guard field.hasPrefix(key + "=") else { return nil }
            values.append(String(field.dropFirst(key.count + 1)))
        }
        guard let pid = Int32(values[0]), let epoch = Int64(values[1]), let beat = UInt64(values[2]),
            let term = Int64(values[3]), let from = Int64(values[4]), let released = Int64(values[5]),
            pid > 0, term > 0
        else { return nil }
        var closing: LeaseClosing?
        if values[6] != "-" {
            // EPOCH:MS:LETTER, exactly three parts.
            let parts = values[6].split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, let closed = Int64(parts[0]), let at = Int64(parts[1]),
                parts[2].utf8.count == 1, let letter = parts[2].utf8.first,
                let kind = LeaseClosing.Kind(ascii: letter)
            else { return nil }
            closing = LeaseClosing(epoch: closed, at: at, kind: kind)
        }
        return HeartbeatRecord(
            pid: pid, epoch: epoch, beat: beat, termMillis: term, takenOver: from, released: released,
            closing: closing)
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
