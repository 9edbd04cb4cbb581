// A participant's status file (`D/participants/NAME.json`), read by every other participant and
// by `baton status`. Invariants: an accepted file is the named participant's, with a pid that
// names one process; what it says encodes to a file that parses to the same status.
import BatonCoordinator
import Foundation
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Data(fuzzInput(data, size))
    guard let status = ParticipantStatus.parse(bytes, name: "host") else { return 0 }
    require(status.name == "host", "a status accepted for another name: \(status.name)")
    require(status.pid > 0, "a status accepted with pid \(status.pid)")
    let encoded: Data
    do {
        encoded = try JSONEncoder().encode(status)
    } catch {
        fatalError("an accepted status does not encode: \(error)")
    }
    require(ParticipantStatus.parse(encoded, name: "host") == status, "encode → parse changed the status")
    return 0
}
