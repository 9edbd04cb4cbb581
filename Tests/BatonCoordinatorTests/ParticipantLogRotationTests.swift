import BatonCoordinator
import BatonLocking
import BatonStore
import BatonTestSupport
import Foundation
import Testing

@Suite("Participant log rotation")
struct ParticipantLogRotationTests {
    /// A log in its own directory, and what its files hold.
    struct Fixture {
        let temp: TemporaryDirectory
        let shared: SharedDirectory

        init() throws {
            temp = try TemporaryDirectory()
            shared = try SharedDirectory(path: temp.path + "/d")
        }

        var path: String { shared.logsPath + "/host.jsonl" }

        /// The raw lines of one file (nil when it does not exist), and whether it ends whole.
        func lines(_ path: String) -> (lines: [String], whole: Bool)? {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            return (text.split(separator: "\n").map(String.init), text.isEmpty || text.hasSuffix("\n"))
        }

        func size(_ path: String) -> Int64 {
            var status = stat()
            return stat(path, &status) == 0 ? Int64(status.st_size) : -1
        }

        /// The `n` of each event in the lines given.
        static func numbers(_ lines: [String]) -> [Int64] {
            lines.compactMap { try? JSONObject(parsingObject: $0) }.compactMap { $0["n"]?.intValue }
        }
    }

    @Test("at its limit the log rotates: one old file kept, each within the limit, no line lost or torn")
    func rotatesAtTheLimit() throws {
        let f = try Fixture()
        let log = try ParticipantLog(directory: f.shared, name: "host", limit: 1024)
        let follower = ParticipantLogReader(directory: f.shared, name: "host")
        var followed: [String] = []
        var rotations = 0
        var previousSize: Int64 = 0
        for n in 1...400 {
            log.log("event", ["n": .int(Int64(n)), "pad": .string(String(repeating: "x", count: n % 37))])
            let size = f.size(f.path)
            if size < previousSize { rotations += 1 }
            previousSize = size
            #expect(size <= 1024 && f.size(f.path + ".1") <= 1024)
            // Read every few lines: a rotation between two reads is followed through.
            if n % 3 == 0 { followed += follower.newLines() }
        }
        followed += follower.newLines()
        #expect(rotations > 10)
        #expect(!FileManager.default.fileExists(atPath: f.path + ".2"))
        // Followed across every rotation, each line exactly once, whole, in order.
        #expect(Fixture.numbers(followed) == Array(1...400))
        #expect(followed.count == 400)
        // The two files hold the newest lines, whole and consecutive across the two.
        let old = try #require(f.lines(f.path + ".1"))
        let current = try #require(f.lines(f.path))
        #expect(old.whole && current.whole)
        let kept = Fixture.numbers(old.lines + current.lines)
        #expect(kept.count == old.lines.count + current.lines.count)
        #expect(kept == Array((400 - Int64(kept.count) + 1)...400))
        #expect(ParticipantLogReader.lines(directory: f.shared, name: "host") == old.lines + current.lines)
    }

    @Test("lines logged at once from several tasks stay whole, and the files keep the newest of each")
    func concurrentLinesStayWhole() async throws {
        let f = try Fixture()
        let log = try ParticipantLog(directory: f.shared, name: "host", limit: 4096)
        let tasks = 8
        let perTask = 300
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for n in 1...perTask {
                        log.log("event", ["task": .int(Int64(task)), "n": .int(Int64(n))])
                    }
                }
            }
        }
        let old = try #require(f.lines(f.path + ".1"))
        let current = try #require(f.lines(f.path))
        #expect(old.whole && current.whole)
        #expect(f.size(f.path) <= 4096 && f.size(f.path + ".1") <= 4096)
        let events = (old.lines + current.lines).map { try? JSONObject(parsingObject: $0) }
        #expect(events.allSatisfy { $0 != nil }, "a torn or glued line")
        // What is kept is the end of the log: each task's newest lines, none missing in between.
        for task in 0..<tasks {
            let numbers = events.compactMap { $0 }.filter { $0["task"]?.intValue == Int64(task) }
                .compactMap { $0["n"]?.intValue }
            if let first = numbers.first {
                #expect(numbers == Array(first...Int64(perTask)), "task \(task)")
            }
        }
    }

    @Test("a rotation that fails loses nothing: the line goes to the full file, and it rotates once it can")
    func failedRotationLosesNothing() throws {
        let f = try Fixture()
        /// Whether a file operation fails, switched by the test.
        final class Failing: Sendable {
            let on: Locked<Bool>
            init(_ on: Bool) { self.on = Locked(on) }
            var isOn: Bool { on.withLock { $0 } }
            func set(_ value: Bool) { on.withLock { $0 = value } }
        }
        let failRename = Failing(true)
        let failOpen = Failing(false)
        var operations = ParticipantLog.FileOperations.system(in: f.shared)
        operations.rename = { from, to in
            if failRename.isOn {
                errno = EACCES
                return -1
            }
            return rename(from, to)
        }
        let systemOpen = operations.open
        operations.open = { path in
            if failOpen.isOn {
                errno = ENOSPC
                return -1
            }
            return systemOpen(path)
        }
        let log = try ParticipantLog(directory: f.shared, name: "host", limit: 1024, operations: operations)
        var n: Int64 = 0
        func logUntil(_ condition: () -> Bool) {
            for _ in 0..<200 where !condition() {
                n += 1
                log.log("event", ["n": .int(n)])
            }
        }
        // The rename fails: the file passes its limit rather than lose a line.
        logUntil { f.size(f.path) > 2048 }
        #expect(f.size(f.path) > 2048)
        #expect(!FileManager.default.fileExists(atPath: f.path + ".1"))
        // The rename works, the new file cannot be opened: lines go on to the renamed file.
        failRename.set(false)
        failOpen.set(true)
        log.log("event", ["n": .int(n + 1)])
        log.log("event", ["n": .int(n + 2)])
        n += 2
        #expect(!FileManager.default.fileExists(atPath: f.path))
        // Once a file can be opened, the log goes on in a new one.
        failOpen.set(false)
        log.log("event", ["n": .int(n + 1)])
        n += 1
        let old = try #require(f.lines(f.path + ".1"))
        let current = try #require(f.lines(f.path))
        #expect(old.whole && current.whole && current.lines.count == 1)
        #expect(Fixture.numbers(old.lines + current.lines) == Array(1...n))
    }

    @Test("a log reopened past its limit rotates before its first new line")
    func reopenedPastTheLimit() throws {
        let f = try Fixture()
        do {
            let log = try ParticipantLog(directory: f.shared, name: "host", limit: 64 * 1024)
            for n in 1...100 { log.log("event", ["n": .int(Int64(n))]) }
        }
        let before = f.size(f.path)
        #expect(before > 1024)
        let log = try ParticipantLog(directory: f.shared, name: "host", limit: 1024)
        log.log("event", ["n": 101])
        #expect(f.size(f.path + ".1") == before)
        #expect(
            Fixture.numbers(ParticipantLogReader.lines(directory: f.shared, name: "host")) == Array(1...101))
    }
}
