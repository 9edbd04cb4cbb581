import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
import Logging
import Testing

/// Issue 53: no path in D follows a symbolic link. A link planted at each file or subdirectory
/// Baton uses, pointing outside D, at a store file, or nowhere, is refused with an error that
/// names it (or, for a file replaced whole, replaced): its target never changes, and nothing is
/// created through it.
@Suite("Symbolic links in the shared directory", .serialized)
struct SymlinkTests {
    /// Where in D the link is planted.
    enum Planted: String, CaseIterable, Sendable {
        case setupLock = "setup.lock"
        case writerLock = "writer.lock"
        case changes = "changes"
        case store = "store.sqlite"
        case writeAheadLog = "store.sqlite-wal"
        case sharedIndex = "store.sqlite-shm"
        case participants = "participants"
        case nameLock = "participants/host.lock"
        case statusFile = "participants/host.json"
        case logs = "logs"
        case log = "logs/host.jsonl"
        case lifecycle = "lifecycle"
        case lifecycleFile = "lifecycle/host"

        var isDirectory: Bool { [.participants, .logs, .lifecycle].contains(self) }
        var isStoreFile: Bool { [.store, .writeAheadLog, .sharedIndex].contains(self) }
        /// Replaced whole by its writer (a rename over the link), or written only when it can be
        /// (the change doorbell): no error is due, only the target left alone.
        var isReplacedOrOptional: Bool { [.statusFile, .lifecycleFile, .changes].contains(self) }
    }

    /// What the link points at.
    enum Target: String, CaseIterable, Sendable {
        /// A file (or, for a subdirectory, a directory) outside D.
        case outside
        /// Another store's file: its write-ahead log (for a store file, the same file).
        case storeFile
        /// Nothing.
        case dangling
    }

    static var cases: [(Planted, Target)] {
        Planted.allCases.flatMap { planted in Target.allCases.map { (planted, $0) } }
    }

    @Test("a link at a path in D is refused, naming it, and its target is left alone", arguments: cases)
    func plantedLink(_ planted: Planted, _ target: Target) async throws {
        let temp = try TemporaryDirectory()
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let shared = try SharedDirectory(path: temp.path + "/d")
        let other = try SharedDirectory(path: temp.path + "/other")
        // Both directories hold a store with a soup written under the lease, so their logs have
        // frames; every subdirectory exists.
        for directory in [shared, other] { try await Self.makeStore(in: directory, logger: quiet) }
        try Data(repeating: 0xA5, count: 8192).write(to: URL(fileURLWithPath: temp.path + "/outside"))
        try FileManager.default.createDirectory(
            atPath: temp.path + "/outside-dir", withIntermediateDirectories: false)
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: temp.path + "/outside-dir/kept"))

        let link = shared.path + "/" + planted.rawValue
        let destination: String =
            switch target {
            case .outside: temp.path + (planted.isDirectory ? "/outside-dir" : "/outside")
            case .storeFile: other.path + "/" + (planted.isStoreFile ? planted.rawValue : "store.sqlite-wal")
            case .dangling: temp.path + "/nowhere"
            }
        try? FileManager.default.removeItem(atPath: link)  // absent is fine: the link goes there
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: destination)
        let before = Self.fingerprint(destination)
        let othersBefore = Self.fingerprint(other.path)

        let errors = await Self.exercise(shared, logger: quiet)

        #expect(Self.fingerprint(destination) == before, "the link's target changed")
        #expect(Self.fingerprint(other.path) == othersBefore, "another store's directory changed")
        if target == .dangling {
            #expect(!FileManager.default.fileExists(atPath: destination), "created through the link")
        }
        if planted.isReplacedOrOptional {
            #expect(errors.allSatisfy { !$0.contains(link) }, "\(errors)")
        } else {
            #expect(
                errors.contains { $0.contains(link) && $0.contains("symbolic link") },
                "no error names \(link): \(errors)")
        }
        if planted == .lifecycleFile {
            // Read through the link: refused as one (a signal written replaces it).
            try FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: destination)
            guard case .invalid(let reason) = LifecycleSignal.read(directory: shared, name: "host") else {
                Issue.record("a lifecycle link was read as a signal")
                return
            }
            #expect(reason.contains("symbolic link"))
        }
    }

    /// Everything that opens a file in D, as a participant and a tool do: the store, a
    /// participant (its name, lease and log), a write under the lease (the change doorbell), a
    /// lifecycle signal and a status. Returns the errors, as text.
    static func exercise(_ shared: SharedDirectory, logger: Logger) async -> [String] {
        var errors: [String] = []
        func attempt(_ body: () async throws -> Void) async {
            do { try await body() } catch { errors.append(String(describing: error)) }
        }
        var store: SharedStore?
        await attempt { store = try SharedStore.open(directory: shared, logger: logger) }
        if let store {
            await attempt {
                let client = RESTClient(baseURL: "http://127.0.0.1:9", token: "t")
                let manager = SyncManager(
                    store: store, targetFactory: RESTTargetFactory(client: client), logger: logger)
                let configuration = ParticipantConfiguration(
                    name: "host", role: .host, syncs: [], initialLifecycle: .background)
                _ = try Participant(
                    configuration: configuration, directory: shared, store: store, manager: manager,
                    logger: logger)
            }
            await attempt {
                let lease = try WriterLease(directory: shared, store: store, name: "tool")
                let held = try await lease.acquire(deadline: .now + .seconds(5))
                defer { lease.release(held) }
                try await store.write(held.fence) { try $0.registerSoup("more", indexSpecs: []) }
            }
        }
        await attempt { try LifecycleSignal.write(.background, directory: shared, name: "host") }
        await attempt {
            try ParticipantStatus(
                role: .host, name: "host", priority: 0, pid: getpid(), lifecycle: .background,
                phase: .background, epoch: nil, managerState: "stopped", updated: WallClock.nowMillis()
            ).publish(in: shared)
        }
        return errors
    }

    /// Makes the store in `directory` and writes a soup under the lease.
    static func makeStore(in directory: SharedDirectory, logger: Logger) async throws {
        let store = try SharedStore.open(directory: directory, logger: logger)
        let lease = try WriterLease(directory: directory, store: store, name: "maker")
        let held = try await lease.acquire(deadline: .now + .seconds(5))
        try await store.write(held.fence) { try $0.registerSoup("made", indexSpecs: []) }
        lease.release(held)
        for sub in [directory.participantsPath, directory.logsPath, directory.lifecyclePath] {
            try directory.ensureSubdirectory(sub)
        }
        try store.close()
    }

    /// What is at `path`, not following a link at it: a file's bytes, or a directory's entries
    /// with theirs (nil when nothing is there).
    static func fingerprint(_ path: String) -> [String: Data]? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
        guard isDirectory.boolValue else {
            return ["": FileManager.default.contents(atPath: path) ?? Data()]
        }
        // Unreadable: no entries.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        var result: [String: Data] = [:]
        for name in names { result[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data() }
        return result
    }
}
