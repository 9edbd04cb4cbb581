import ArgumentParser
import BatonCoordinator
import BatonStore
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the writer, the participants and sync counts of a shared directory."
    )

    @OptionGroup var directory: DirectoryOptions
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let snapshot = try CoordinatorSnapshot.read(directory.dir)
        if json {
            CLIOutput.json(snapshot.jsonValue)
            return
        }
        if let writer = snapshot.writer {
            CLIOutput.line("writer: \(writer.name) (pid \(writer.pid), epoch \(writer.epoch))")
        } else {
            CLIOutput.line("writer: none")
        }
        let rows = snapshot.participants.map { p in
            [
                p.name, p.role, String(p.priority), String(p.pid), p.isAlive ? "yes" : "no",
                p.lifecycle.rawValue, p.phase, p.managerState,
            ]
        }
        if rows.isEmpty {
            CLIOutput.line("participants: none")
        } else {
            for line in Table.render(
                header: ["NAME", "ROLE", "PRIORITY", "PID", "ALIVE", "LIFECYCLE", "PHASE", "MANAGER"],
                rows: rows)
            {
                CLIOutput.line(line)
            }
        }
        for p in snapshot.participants {
            if let problem = p.problem { CLIOutput.line("problem: \(p.name): \(problem)") }
        }
        let counts = snapshot.syncCounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        CLIOutput.line("syncs: \(counts.isEmpty ? "none" : counts.joined(separator: " "))")
    }
}

/// What `status` and `wait` look at: the open lease interval, the participants' files and the
/// sync counts.
struct CoordinatorSnapshot {
    struct Writer {
        var name: String
        var pid: Int32
        var epoch: Int64
    }

    var writer: Writer?
    var participants: [ParticipantStatus]
    var syncCounts: [String: Int]
    var syncStatuses: [String: String]

    static func read(_ path: String) throws -> CoordinatorSnapshot {
        let shared = try SharedDirectory(path: path, create: false)
        let participants = ParticipantStatus.readAll(in: shared)
        guard
            let store = try? SharedStore.open(
                directory: shared, create: false, logger: .init(label: "baton.status"))
        else {
            return CoordinatorSnapshot(
                writer: nil, participants: participants, syncCounts: [:], syncStatuses: [:])
        }
        return try store.read { reader in
            // The open interval names the writer, if its process is still alive and does not
            // say it has let go (a release whose bookkeeping could not be written leaves the
            // interval open until the next holder closes it).
            let open = try reader.leaseHistory().last { $0.released == nil }
            let writer = open.flatMap { record -> Writer? in
                let alive = kill(record.pid, 0) == 0 || errno == EPERM
                let letGo = participants.contains { p in
                    p.pid == record.pid && p.name == record.name && !p.isWriter
                        && p.phase != HandOverStateMachine.Phase.releasing.rawValue
                }
                return alive && !letGo ? Writer(name: record.name, pid: record.pid, epoch: record.epoch) : nil
            }
            var statuses: [String: String] = [:]
            for row in try reader.syncStates() { if let name = row.name { statuses[name] = row.status } }
            return CoordinatorSnapshot(
                writer: writer, participants: participants, syncCounts: try reader.syncStatusCounts(),
                syncStatuses: statuses)
        }
    }

    var jsonValue: JSONValue {
        var participantsJSON: [JSONValue] = []
        for p in participants {
            var object = p.json
            object["alive"] = .bool(p.isAlive)
            participantsJSON.append(.object(object))
        }
        return [
            "writer": writer.map {
                ["name": .string($0.name), "pid": .int(Int64($0.pid)), "epoch": .int($0.epoch)]
            } ?? .null,
            "participants": .array(participantsJSON),
            "syncs": .object(syncCounts.mapValues { .int(Int64($0)) }),
        ]
    }
}
