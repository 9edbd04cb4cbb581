import ArgumentParser
import BatonHarness
import BatonSync

struct SyncsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncs",
        abstract: "List the sync states persisted in a store (read-only, from any process, at any time).",
        discussion: """
            maxTimeStamp is printed as milliseconds since 1970 (-1: none yet). REFUSED is a sync \
            up's count of the records the server refused in its last run (the run still ends done, \
            as Mobile Sync's does); --refused SYNC lists the records that did not go up, with the \
            error each carries (__last_error__).
            """
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "Only syncs with this status: new, running, stopped, failed or done.") var status: String?
    @Option(
        help: ArgumentHelp(
            "List this sync up's records that did not go up, with their errors (by name, or id).",
            valueName: "sync"))
    var refused: String?
    @Flag(help: "Print a JSON array instead of a table.") var json = false

    func validate() throws {
        if let status, SyncStatus(rawValue: status) == nil {
            throw ValidationError(
                "--status must be one of \(SyncStatus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        let store = try directory.openStoreForReading()
        if let refused {
            let records = try RefusedRecords.read(store, sync: refused)
            if json {
                try CLIOutput.json(records)
            } else {
                for line in records.lines { CLIOutput.line(line) }
            }
            return
        }
        let report = try SyncsReport.read(
            store, directory: directory.dir, status: status.flatMap(SyncStatus.init(rawValue:)))
        if json {
            try CLIOutput.json(report)
        } else if report.syncs.isEmpty {
            CLIOutput.line(status.map { "no \($0) syncs" } ?? "no syncs")
        } else {
            for line in report.lines { CLIOutput.line(line) }
        }
    }
}
