import BatonCoordinator
import BatonStore
// The record line in `D/writer.lock` (HeartbeatRecord), read by every waiter.
// Invariants: an accepted line prints (fixed length) to a line that parses to the same record;
// a record never has a pid or a term of zero or less; the parser (field by field, allocating
// nothing) accepts exactly what the plain reading of the format below accepts, with the same
// fields.
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    let record = HeartbeatRecord(parsing: text)
    let reference = referenceParse(Array(text.utf8))
    require(
        record == reference,
        "the parser read \(String(describing: record)), the reference \(String(describing: reference))")
    guard let record else { return 0 }
    require(
        record.pid > 0 && record.termMillis > 0, "a record with pid \(record.pid), term \(record.termMillis)")
    let line = record.line
    require(HeartbeatRecord(parsing: line) == record, "parse → print → parse changed the record: \(line)")
    return 0
}

/// The format read plainly: eight whitespace-separated fields, `baton-lease` then `key=value`
/// for pid, epoch, beat, term, from, released and close (`-` or `EPOCH:MS:r|t|n`).
func referenceParse(_ bytes: [UInt8]) -> HeartbeatRecord? {
    let fields = bytes.split(whereSeparator: { [0x20, 0x0A, 0x09, 0x0D].contains($0) })
    guard fields.count == 8, fields[0].elementsEqual("baton-lease".utf8) else { return nil }
    func value(_ index: Int, _ key: String) -> String? {
        let field = String(decoding: fields[index], as: UTF8.self)
        guard field.hasPrefix(key + "=") else { return nil }
        return String(field.dropFirst(key.count + 1))
    }
    guard let pid = value(1, "pid").flatMap({ Int32($0) }),
        let epoch = value(2, "epoch").flatMap({ Int64($0) }),
        let beat = value(3, "beat").flatMap({ UInt64($0) }),
        let term = value(4, "term").flatMap({ Int64($0) }),
        let from = value(5, "from").flatMap({ Int64($0) }),
        let released = value(6, "released").flatMap({ Int64($0) }),
        let close = value(7, "close"), pid > 0, term > 0
    else { return nil }
    var closing: LeaseClosing?
    if close != "-" {
        let parts = close.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let closed = Int64(parts[0]), let at = Int64(parts[1]),
            parts[2].count == 1, let kind = LeaseClosing.Kind(letter: parts[2].first!)
        else { return nil }
        closing = LeaseClosing(epoch: closed, at: at, kind: kind)
    }
    return HeartbeatRecord(
        pid: pid, epoch: epoch, beat: beat, termMillis: term, takenOver: from, released: released,
        closing: closing)
}
