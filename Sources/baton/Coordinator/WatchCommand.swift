import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore
import Foundation

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the store's change sequence and soup counts whenever the writer rings D/changes.",
        discussion: "Runs until Ctrl-C. Read-only: safe beside running participants."
    )

    @OptionGroup var directory: DirectoryOptions
    @Flag(help: "Print JSON lines.") var json = false

    func run() async throws {
        let store = try directory.openStoreForReading()
        let events = try DirectoryWatcher(root: store.directory.path, subdirectories: []).events()
        var last: Int64 = -1
        try report(store, last: &last)
        for await event in events {
            switch event {
            case .changed(_, let name) where name == "changes": try report(store, last: &last)
            case .rescan: try report(store, last: &last)
            default: continue
            }
        }
    }

    func report(_ store: SharedStore, last: inout Int64) throws {
        let report = try ChangeReport.read(store)
        guard report.changeSequence != last else { return }
        last = report.changeSequence
        if json { try CLIOutput.json(report) } else { CLIOutput.line(report.line) }
    }
}
