import ArgumentParser
import BatonHarness
import BatonStore

struct StoreInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract:
            "Show soups, record counts, the change sequence, an integrity check, and the sizes of the lease history, the commit log and the logs.",
        discussion: "Read-only and safe while participants run: it never waits for the writer."
    )

    @OptionGroup var directory: DirectoryOptions
    @Flag(help: "Print one JSON object instead of text.") var json = false

    func run() throws {
        let store = try directory.openStoreForReading()
        let info = try store.info()
        if json {
            try CLIOutput.json(info)
            return
        }
        for line in info.lines { CLIOutput.line(line) }
    }
}
