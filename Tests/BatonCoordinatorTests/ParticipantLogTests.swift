import BatonCoordinator
import BatonLocking
import BatonStore
import BatonTestSupport
import Foundation
import Testing

@Suite("Participant log on a failing disk")
struct ParticipantLogTests {
    /// A `write(2)` that, on the calls named, writes only part of the bytes or nothing (as a full
    /// disk does), and otherwise writes them all.
    final class FailingWriter: Sendable {
        enum Failure: Sendable { case short(Int), nothing }
        let plan: Locked<[Int: Failure]>
        let calls = Locked(0)

        init(_ plan: [Int: Failure]) { self.plan = Locked(plan) }

        var writer: ParticipantLog.Writer {
            { [self] fd, pointer, count in
                let call = calls.withLock {
                    $0 += 1; return $0
                }
                switch plan.withLock({ $0[call] }) {
                case .short(let bytes): return write(fd, pointer, min(bytes, count))
                case .nothing: return -1
                case nil: return write(fd, pointer, count)
                }
            }
        }
    }

    @Test("a line torn by a full disk stays apart: every later event reads whole")
    func tornLineNeverGluedToTheNext() throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        let failing = FailingWriter([2: .short(17), 3: .nothing, 5: .short(1)])
        let log = try ParticipantLog(directory: shared, name: "host", writer: failing.writer)
        for index in 1...7 { log.log("event", ["n": .int(Int64(index))]) }

        let text = try String(contentsOfFile: shared.logsPath + "/host.jsonl", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        let events = lines.compactMap { try? JSONObject(parsingObject: String($0)) }
        // 2 and 5 were torn (kept apart, not JSON), 3 never written; the rest whole.
        #expect(events.map { $0["n"]?.intValue } == [1, 4, 6, 7])
        #expect(lines.count == events.count + 2)
        #expect(text.hasSuffix("\n"))
    }
}
