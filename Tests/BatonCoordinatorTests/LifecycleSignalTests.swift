import BatonCoordinator
import BatonServer
import BatonStore
import BatonTestSupport
import Foundation
import Testing

@Suite("Lifecycle signal files")
struct LifecycleSignalTests {
    func directory() throws -> (TemporaryDirectory, SharedDirectory) {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        try shared.ensureSubdirectory(shared.lifecyclePath)
        return (temp, shared)
    }

    @Test(
        "what a shell writes is read, junk is refused with a reason",
        arguments: [
            ("foreground", LifecycleSignal.Reading.valid(.foreground)),
            ("background\n", .valid(.background)),
            ("  BACKGROUND \n", .valid(.background)),
            ("", .empty),
            ("\n", .empty),
            ("sideways", .invalid("holds neither 'foreground' nor 'background'")),
            ("\u{0}\u{1}\u{2}", .invalid("holds neither 'foreground' nor 'background'")),
        ])
    func contents(text: String, expected: LifecycleSignal.Reading) throws {
        let (temp, shared) = try directory()
        try Data(text.utf8).write(to: URL(fileURLWithPath: shared.lifecyclePath + "/p"))
        #expect(LifecycleSignal.read(directory: shared, name: "p") == expected)
        _ = temp
    }

    @Test("missing files, symlinks, directories and oversize files are refused, never followed")
    func hostileFiles() throws {
        let (temp, shared) = try directory()
        #expect(LifecycleSignal.read(directory: shared, name: "none") == .missing)
        try Data("foreground".utf8).write(to: URL(fileURLWithPath: temp.path + "/target"))
        try FileManager.default.createSymbolicLink(
            atPath: shared.lifecyclePath + "/link", withDestinationPath: temp.path + "/target")
        #expect(
            LifecycleSignal.read(directory: shared, name: "link")
                == .invalid("is a symbolic link, or lies under one"))
        try FileManager.default.createDirectory(
            atPath: shared.lifecyclePath + "/dir", withIntermediateDirectories: false)
        #expect(LifecycleSignal.read(directory: shared, name: "dir") == .invalid("is not a regular file"))
        try Data(repeating: 0x61, count: 1 << 20).write(
            to: URL(fileURLWithPath: shared.lifecyclePath + "/big"))
        guard case .invalid(let reason) = LifecycleSignal.read(directory: shared, name: "big") else {
            Issue.record("a 1 MiB file was accepted")
            return
        }
        #expect(reason.contains("limit"))
    }

    /// The reader's rule, restated: trimmed, case-insensitive `foreground` or `background`.
    static func expected(_ bytes: [UInt8]) -> LifecycleSignal.Reading {
        if bytes.count > LifecycleSignal.maxSize {
            return .invalid("is \(bytes.count) bytes (limit \(LifecycleSignal.maxSize))")
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return .empty }
        return Lifecycle(rawValue: text.lowercased()).map { .valid($0) }
            ?? .invalid("holds neither 'foreground' nor 'background'")
    }

    @Test("random and mutated contents: never a crash, always the reading the rule gives", arguments: 0..<20)
    func fuzz(seed: UInt64) throws {
        let (temp, shared) = try directory()
        defer { withExtendedLifetime(temp) {} }
        var random = SplitMix64(seed: seed)  // seeded, so a failing case repeats
        let path = shared.lifecyclePath + "/p"
        for _ in 0..<50 {
            var bytes: [UInt8]
            if Bool.random(using: &random) {
                bytes = (0..<Int.random(in: 0...300, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                // A valid signal, mutated: flipped bits, inserted or removed bytes, case, whitespace.
                bytes = Array((Bool.random(using: &random) ? " Foreground\n" : "background").utf8)
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let position = Int.random(in: 0...bytes.count, using: &random)
                    switch Int.random(in: 0...3, using: &random) {
                    case 0 where position < bytes.count:
                        bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
                    case 1 where position < bytes.count: bytes.remove(at: position)
                    case 2:
                        bytes.insert(
                            [0x20, 0x0A, 0x09, 0x00, 0xC3][Int.random(in: 0...4, using: &random)],
                            at: position)
                    default: bytes = bytes.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
                    }
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(LifecycleSignal.read(directory: shared, name: "p") == Self.expected(bytes), "\(bytes)")
        }
    }

    @Test("the initial lifecycle never overwrites a signal that is already there")
    func writeIfAbsent() throws {
        let (temp, shared) = try directory()
        #expect(try LifecycleSignal.writeIfAbsent(.background, directory: shared, name: "host"))
        #expect(LifecycleSignal.read(directory: shared, name: "host") == .valid(.background))
        try LifecycleSignal.write(.foreground, directory: shared, name: "host")
        #expect(try !LifecycleSignal.writeIfAbsent(.background, directory: shared, name: "host"))
        #expect(LifecycleSignal.read(directory: shared, name: "host") == .valid(.foreground))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: shared.lifecyclePath)
        #expect(leftovers == ["host"])
        _ = temp
    }

    @Test("writing is atomic and names are validated")
    func write() throws {
        let (temp, shared) = try directory()
        try LifecycleSignal.write(.background, directory: shared, name: "host")
        #expect(LifecycleSignal.read(directory: shared, name: "host") == .valid(.background))
        #expect(throws: CoordinatorError.self) {
            try LifecycleSignal.write(.foreground, directory: shared, name: "../evil")
        }
        #expect(throws: CoordinatorError.self) {
            try LifecycleSignal.write(.foreground, directory: shared, name: "")
        }
        _ = temp
    }
}

@Suite("Directory watcher (inotify)")
struct DirectoryWatcherTests {
    @Test(
        "reports writes and renames, and a deleted then recreated subdirectory as a rescan",
        .timeLimit(.minutes(1)))
    func events() async throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        try shared.ensureSubdirectory(shared.lifecyclePath)
        let events = try DirectoryWatcher(root: shared.path, subdirectories: ["lifecycle"]).events()
        var iterator = events.makeAsyncIterator()

        try LifecycleSignal.write(.foreground, directory: shared, name: "host")
        var seen: [DirectoryWatcher.Event] = []
        while let event = await iterator.next() {
            seen.append(event)
            if event == .changed(directory: "lifecycle", name: "host") { break }
        }
        #expect(seen.contains(.changed(directory: "lifecycle", name: "host")))

        try FileManager.default.removeItem(atPath: shared.lifecyclePath)
        var sawDeletion = false
        while let event = await iterator.next() {
            if case .rescan = event {
                sawDeletion = true
                break
            }
        }
        #expect(sawDeletion)
        try shared.ensureSubdirectory(shared.lifecyclePath)
        // The new directory is watched again: a write in it is reported.
        var sawRecreatedWrite = false
        try LifecycleSignal.write(.background, directory: shared, name: "ext")
        while let event = await iterator.next() {
            if event == .changed(directory: "lifecycle", name: "ext") {
                sawRecreatedWrite = true
                break
            }
            if case .rescan = event {
                // The recreation itself; write again in case the first write raced the re-watch.
                try LifecycleSignal.write(.background, directory: shared, name: "ext")
            }
        }
        #expect(sawRecreatedWrite)
    }

    @Test(
        "a lifecycle file is reported when its writer closes it, not when it is created empty (echo > file)",
        .timeLimit(.minutes(1)))
    func readOnClose() async throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        try shared.ensureSubdirectory(shared.lifecyclePath)
        let events = try DirectoryWatcher(root: shared.path, subdirectories: ["lifecycle"]).events()
        var iterator = events.makeAsyncIterator()
        let path = shared.lifecyclePath + "/host"
        for round in 0..<20 {
            // What a shell's `echo foreground > file` does: create (empty), then write, then close.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            // A barrier the watcher reports after the creation (inotify keeps the order).
            try LifecycleSignal.write(.background, directory: shared, name: "barrier")
            var beforeBarrier: [DirectoryWatcher.Event] = []
            while let event = await iterator.next(),
                event != .changed(directory: "lifecycle", name: "barrier")
            {
                beforeBarrier.append(event)
            }
            #expect(
                !beforeBarrier.contains(.changed(directory: "lifecycle", name: "host")),
                "round \(round): the empty file was reported at its creation")
            let text = Array("foreground\n".utf8)
            #expect(text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == text.count)
            close(fd)
            while let event = await iterator.next(), event != .changed(directory: "lifecycle", name: "host") {
            }
            #expect(LifecycleSignal.read(directory: shared, name: "host") == .valid(.foreground))
            try FileManager.default.removeItem(atPath: path)
            // The deletion's own event, before the next round's creation.
            while let event = await iterator.next(), event != .changed(directory: "lifecycle", name: "host") {
            }
        }
    }
}

@Suite("Participant status files")
struct ParticipantStatusFileTests {
    @Test("symlinked, oversize and junk status files are skipped; a real one is read")
    func hostileStatusFiles() throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        try shared.ensureSubdirectory(shared.participantsPath)
        let real = ParticipantStatus(
            role: .host, name: "host", priority: 100, pid: getpid(), lifecycle: .foreground, phase: .writer,
            epoch: 3, managerState: "accepting_syncs", updated: 1)
        try real.publish(in: shared)
        // A planted status elsewhere, linked in: never followed.
        let planted = temp.path + "/planted.json"
        try FileManager.default.copyItem(atPath: shared.participantsPath + "/host.json", toPath: planted)
        try FileManager.default.createSymbolicLink(
            atPath: shared.participantsPath + "/linked.json", withDestinationPath: planted)
        var big = try String(contentsOfFile: planted, encoding: .utf8)
        big += String(repeating: " ", count: 70 * 1024)
        try big.write(toFile: shared.participantsPath + "/big.json", atomically: false, encoding: .utf8)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: shared.participantsPath + "/junk.json"))
        try Data([0xFF, 0x00, 0xFE]).write(to: URL(fileURLWithPath: shared.participantsPath + "/binary.json"))
        // Every participant takes `<name>.lock`; the hostile files get one too, so they are read
        // and refused, not merely unlisted.
        var locks: [FileLock] = []
        for name in ["host", "linked", "big", "junk", "binary"] {
            let lock = try FileLock(path: shared.participantsPath + "/\(name).lock", in: shared)
            #expect(try lock.tryLock())
            locks.append(lock)
        }
        // A well-formed status with no name lock beside it is not a participant's.
        var stray = real
        stray.name = "stray"
        try stray.publish(in: shared)

        let read = ParticipantStatus.readAll(in: shared)
        #expect(read.map(\.name) == ["host"])
        #expect(read.first?.epoch == 3)
        for lock in locks { lock.unlock() }
    }
}

@Suite("Participant status, published and read")
struct ParticipantStatusRoundTripTests {
    @Test("a published status reads back equal; one of an unknown phase is skipped like junk")
    func roundTrip() throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        let status = ParticipantStatus(
            role: .appExtension, name: "ext", priority: 10, pid: getpid(), lifecycle: .foreground,
            phase: .writer, epoch: 7, managerState: "accepting", updated: 1_700_000_000_000,
            problem: "disk full",
            retrying: [SyncRetry(name: "accounts", attempt: 2, lastError: "503", nextAttempt: 12)])
        try status.publish(in: shared)
        #expect(FileManager.default.createFile(atPath: shared.participantsPath + "/ext.lock", contents: nil))
        #expect(ParticipantStatus.readAll(in: shared) == [status])

        var text = try String(contentsOfFile: shared.participantsPath + "/ext.json", encoding: .utf8)
        text = text.replacingOccurrences(of: "\"writer\"", with: "\"levitating\"")
        try text.write(toFile: shared.participantsPath + "/ext.json", atomically: true, encoding: .utf8)
        #expect(ParticipantStatus.readAll(in: shared).isEmpty)
    }
}
