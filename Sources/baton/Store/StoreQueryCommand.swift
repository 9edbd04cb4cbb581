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
        var conditions: [SoupQuery.Condition] = []
        for item in exact {
            let (path, value) = try Self.split(item)
            conditions.append(.exact(path, (try? JSONValue(parsing: value)) ?? .string(value)))
        }
        for item in like {
            let (path, value) = try Self.split(item)
            conditions.append(.like(path, value))
        }
        let orders = order.map { item -> SoupQuery.Order in
            let parts = item.split(separator: ":", maxSplits: 1)
            return SoupQuery.Order(
                String(parts[0]), ascending: parts.count < 2 || parts[1].lowercased() != "desc")
        }
        let query = SoupQuery(where: conditions, orderBy: orders, limit: limit, offset: offset)
        let store = try directory.openStore(create: false)
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

    static func split(_ item: String) throws -> (String, String) {
        guard let equals = item.firstIndex(of: "=") else {
            throw CLIError(message: "'\(item)' is not PATH=VALUE")
        }
        return (String(item[..<equals]), String(item[item.index(after: equals)...]))
    }
}
