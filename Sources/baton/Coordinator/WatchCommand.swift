import ArgumentParser
import BatonCoordinator
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
        let store = try directory.openStore(create: false)
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
        let info = try store.read { reader in
            (try reader.changeSequence(), try reader.soups().map { ($0.name, try reader.count(in: $0.name)) })
        }
        guard info.0 != last else { return }
        last = info.0
        if json {
            CLIOutput.json(
                [
                    "changeSequence": .int(info.0),
                    "soups": .object(
                        Dictionary(uniqueKeysWithValues: info.1.map { ($0.0, JSONValue.int(Int64($0.1))) })),
                ])
        } else {
            CLIOutput.line("change \(info.0): " + info.1.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
        }
    }
}
