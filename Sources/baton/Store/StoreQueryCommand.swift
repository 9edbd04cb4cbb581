import ArgumentParser
import BatonHarness
import BatonStore

struct StoreQueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Print the records of a soup that match, one JSON object per line.",
        discussion:
            "Conditions use indexed paths only. Values are JSON when they parse as JSON, else strings."
    )

    @OptionGroup var directory: DirectoryOptions
    @Option(help: "The soup to read.") var soup: String
    @Option(name: .customLong("where"), help: "PATH=VALUE: exact match.") var exact: [String] = []
    @Option(help: "PATH=PATTERN: SQL LIKE match.") var like: [String] = []
    @Option(help: "PATH[:desc]: sort key (repeatable).") var order: [String] = []
    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records.") var offset = 0
    @Flag(help: "Print only the count.") var count = false

    func run() throws {
        let query = try SoupQuery(exact: exact, like: like, order: order, limit: limit, offset: offset)
        let store = try directory.openStoreForReading()
        if count {
            CLIOutput.line(String(try store.count(query, in: soup)))
            return
        }
        for entry in try store.query(query, in: soup) {
            var record = entry.record
            record["_soupEntryId"] = .int(entry.entryId)
            CLIOutput.json(.object(record))
        }
    }
}
