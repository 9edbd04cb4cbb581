import ArgumentParser
import BatonCoordinator
import BatonStore
import BatonSync
import Foundation

struct SyncsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncs",
        abstract: "List the sync states persisted in a store (read-only, from any process, at any time).",
        discussion: "maxTimeStamp is printed as milliseconds since 1970 (-1: none yet)."
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "Only syncs with this status: new, running, stopped, failed or done.") var status: String?
    @Flag(help: "Print a JSON array instead of a table.") var json = false

    func validate() throws {
        if let status, SyncStatus(rawValue: status) == nil {
            throw ValidationError(
                "--status must be one of \(SyncStatus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        let store = try directory.openStore(create: false)
        let syncs =
            try status.flatMap(SyncStatus.init(rawValue:)).map { try SyncState.getSyncsWithStatus(store, $0) }
            ?? SyncState.all(store)
        // Configured syncs a live participant retries: the last failure and the next attempt.
        var retries: [String: SyncRetry] = [:]
        if let shared = try? SharedDirectory(path: directory.dir, create: false) {
            for participant in ParticipantStatus.readAll(in: shared) where participant.isAlive {
                for retry in participant.retrying { retries[retry.name] = retry }
            }
        }
        if json {
            CLIOutput.json(
                .array(
                    syncs.map { sync in
                        var object = sync.jsonValue.objectValue ?? [:]
                        object["retry"] = sync.name.flatMap { retries[$0] }.map(\.jsonValue) ?? .null
                        return .object(object)
                    }))
            return
        }
        guard !syncs.isEmpty else {
            CLIOutput.line(status.map { "no \($0) syncs" } ?? "no syncs")
            return
        }
        let header = ["ID", "NAME", "TYPE", "SOUP", "STATUS", "PROGRESS", "TOTAL", "MAXTIMESTAMP", "ERROR"]
        let rows = syncs.map { sync in
            [
                String(sync.id), sync.name ?? "-", sync.type.rawValue, sync.soupName, sync.status.rawValue,
                "\(sync.progress)%",
                String(sync.totalSize), String(sync.maxTimeStamp),
                Self.errorColumn(sync, retry: sync.name.flatMap { retries[$0] }),
            ]
        }
        for line in Table.render(header: header, rows: rows) { CLIOutput.line(line) }
    }

    /// The error (its first 60 characters), and for a retried sync when the next attempt starts.
    static func errorColumn(_ sync: SyncState, retry: SyncRetry?) -> String {
        var text = (sync.error ?? retry?.lastError).map { String($0.prefix(60)) } ?? ""
        if let retry {
            let time = SyncRetry.clock.string(
                from: Date(timeIntervalSince1970: Double(retry.nextAttempt) / 1000))
            text += (text.isEmpty ? "" : "; ") + "retry \(retry.attempt + 1) at \(time)"
        }
        return text
    }
}

extension SyncRetry {
    var jsonValue: JSONValue {
        [
            "attempt": .int(Int64(attempt)), "lastError": .string(lastError),
            "nextAttempt": .int(nextAttempt),
        ]
    }
}

extension SyncState {
    var jsonValue: JSONValue {
        var object: JSONObject = [
            "id": .int(id), "name": name.map(JSONValue.string) ?? .null, "type": .string(type.rawValue),
            "soup": .string(soupName), "status": .string(status.rawValue), "progress": .int(Int64(progress)),
            "totalSize": .int(Int64(totalSize)), "maxTimeStamp": .int(maxTimeStamp),
            "mergeMode": .string(mergeMode.rawValue), "target": .object(target),
        ]
        object["error"] = error.map(JSONValue.string) ?? .null
        object["startTime"] = startTime.map(JSONValue.int) ?? .null
        object["endTime"] = endTime.map(JSONValue.int) ?? .null
        return .object(object)
    }
}

/// Left-aligned text columns.
enum Table {
    static func render(header: [String], rows: [[String]]) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1
                    ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }
}
