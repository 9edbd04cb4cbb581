import BatonCoordinator
// The record line in `D/writer.lock` (HeartbeatRecord), read by every waiter.
// Invariants: an accepted line prints (fixed length) to a line that parses to the same record;
// a record never has a pid or a term of zero or less.
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    guard let record = HeartbeatRecord(parsing: text) else { return 0 }
    require(
        record.pid > 0 && record.termMillis > 0, "a record with pid \(record.pid), term \(record.termMillis)")
    let line = record.line
    require(HeartbeatRecord(parsing: line) == record, "parse → print → parse changed the record: \(line)")
    return 0
}
