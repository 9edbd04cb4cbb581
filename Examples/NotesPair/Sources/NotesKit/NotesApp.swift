import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging
import ServiceLifecycle

/// One app of the pair: a participant syncing Accounts into the `notes` soup (down, and up for
/// its own edits), with a line-oriented console on stdin and stdout:
///
/// - in: `add TEXT`, `edit ENTRY TEXT`, `delete ENTRY`, `background`, `foreground`, `quit`;
/// - out: `ready NAME`, `count N local M` (live, from a query observation that also sees the
///   other app's commits), `writer` / `released`, `added ENTRY`, `edited ENTRY`, `deleted
///   ENTRY`, `error: …`.
///
/// An edit needs the writer lease: off it, it fails at once, naming the writer (an app could
/// pass `waitingUpTo:` to wait for it instead).
///
/// Usage: `NotesHost|NotesShare --dir D --server URL --token TOKEN [--lifecycle foreground|background]`.
public enum NotesApp {
    public static func main(name: String, role: ParticipantRole) async {
        do {
            try await run(name: name, role: role, arguments: Array(CommandLine.arguments.dropFirst()))
        } catch {
            say("error: \(error)")
            exit(1)
        }
    }

    struct Options {
        var dir = ""
        var server = ""
        var token = ""
        var lifecycle: Lifecycle = .background

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                guard let value = rest.popFirst() else { throw Usage("\(flag) needs a value") }
                switch flag {
                case "--dir": dir = value
                case "--server": server = value
                case "--token": token = value
                case "--lifecycle":
                    guard let lifecycle = Lifecycle(rawValue: value) else {
                        throw Usage("--lifecycle is foreground or background")
                    }
                    self.lifecycle = lifecycle
                default: throw Usage("unknown option \(flag)")
                }
            }
            guard !dir.isEmpty, !server.isEmpty, !token.isEmpty else {
                throw Usage("give --dir, --server and --token")
            }
        }
    }

    struct Usage: Error, CustomStringConvertible {
        var description: String
        init(_ text: String) {
            description = "\(text); usage: --dir D --server URL --token T [--lifecycle L]"
        }
    }

    static func run(name: String, role: ParticipantRole, arguments: [String]) async throws {
        let options = try Options(arguments)
        var logger = Logger(label: "notes.\(name)")
        logger.logLevel = .warning
        let shared = try SharedDirectory(path: options.dir)
        let store = try SharedStore.open(directory: shared, logger: logger)
        let client = RESTClient(baseURL: options.server, token: options.token, logger: logger)
        // Not the writer yet: the manager may not write until the participant holds the lease.
        let manager = SyncManager(
            store: store, targetFactory: RESTTargetFactory(client: client), logger: logger)
        let participant = try Participant(
            configuration: ParticipantConfiguration(
                name: name, role: role,
                syncs: [
                    .down(
                        name: "notes-down", soup: "notes",
                        target: try SoqlSyncDownTarget(client: client, query: "SELECT Id, Name FROM Account"),
                        options: SyncOptions()),
                    .up(
                        name: "notes-up", soup: "notes",
                        target: try RESTSyncUpTarget(client: client, objectType: "Account"),
                        options: SyncOptions()),
                ],
                // Registered under the lease each time this app becomes the writer (a read when
                // it exists already): starting the app writes nothing.
                soups: [SoupSpec("notes", indexSpecs: [IndexSpec(path: "Id", type: .string)])],
                initialLifecycle: options.lifecycle),
            directory: shared, store: store, manager: manager, logger: logger)
        let group = ServiceGroup(
            services: [participant], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        let notes = try store.observe(.all, in: "notes")
        let events = participant.events
        say("ready \(name)")
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                for await entries in notes {
                    let kept = entries.filter { !LocalFlags.isDeleted($0.record) }
                    say("count \(kept.count) local \(entries.filter { LocalFlags.isDirty($0.record) }.count)")
                }
            }
            tasks.addTask {
                for await event in events {
                    switch event {
                    case .leaseAcquired: say("writer")
                    case .leaseReleased: say("released")
                    default: break
                    }
                }
            }
            for await line in standardInputLines() {
                if line == "quit" { break }
                await handle(line, participant: participant, manager: manager)
            }
            // stdin closed or `quit`: hand everything back and leave. Through the group, whose
            // run() then returns: a participant that ended by itself (`participant.shutdown()`)
            // would be a service that finished unexpectedly, and the group's run() would throw.
            await group.triggerGracefulShutdown()
            try await tasks.next()
            tasks.cancelAll()
        }
    }

    static func handle(_ line: String, participant: Participant, manager: SyncManager) async {
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        do {
            switch words.first {
            case "add" where words.count >= 2:
                let text = words.dropFirst().joined(separator: " ")
                let entry = try await participant.write { edits in
                    try edits.create(["Name": .string(text)], in: "notes")
                }
                say("added \(entry.entryId)")
            case "edit" where words.count == 3:
                guard let id = Int64(words[1]) else { throw Usage("edit ENTRY TEXT") }
                let text = words[2]
                _ = try await participant.write { edits in
                    try edits.update(id, in: "notes") { $0["Name"] = .string(text) }
                }
                say("edited \(id)")
            case "delete" where words.count == 2:
                guard let id = Int64(words[1]) else { throw Usage("delete ENTRY") }
                _ = try await participant.write { edits in
                    try edits.delete(id, in: "notes")
                }
                say("deleted \(id)")
            case "background":
                try participant.enterBackground()
                return
            case "foreground":
                try participant.enterForeground()
                return
            case nil:
                return
            default:
                throw Usage(
                    "unknown command '\(line.prefix(40))'; add TEXT, edit ENTRY TEXT, delete ENTRY, background, foreground, quit"
                )
            }
            // Send the edit now, as an app would after saving (after the sync up under way, which
            // may have started before this edit committed).
            do {
                _ = try await manager.reSync(name: "notes-up")
            } catch let error as SyncError where error.code == .alreadyRunning {
                if let running = try await manager.getSyncStatus(name: "notes-up") {
                    _ = await manager.waitForSync(id: running.id)
                }
                _ = try await manager.reSync(name: "notes-up")
            }
        } catch {
            say("error: \(error)")
        }
    }

    /// stdin, line by line, read on a thread of its own (a blocking read has no place on the
    /// cooperative pool).
    static func standardInputLines() -> AsyncStream<String> {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        Thread.detachNewThread {
            while let line = readLine() {
                continuation.yield(line.trimmingCharacters(in: .whitespaces))
            }
            continuation.finish()
        }
        return lines
    }

    /// One line on stdout, unbuffered (a pipe would otherwise hold it).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
