import ArgumentParser
import BatonHarness
import BatonStore
import Foundation

struct StoreUpsertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upsert",
        abstract: "Insert or update records in a soup, in one transaction.",
        discussion: """
            Records are JSON objects given as arguments, or one per line on stdin when none is \
            given. With --external-id PATH, a record whose PATH matches an existing record's \
            updates it, and every record must have a value at PATH (records without one are \
            refused, by their position). Without --external-id every record is inserted as a new \
            one. With --local, records are marked as locally created (new) or updated \
            (matched) so the next sync up sends them. It takes the writer lease like a \
            participant (waiting up to --timeout while one holds it), after checking the soup \
            and the records first.
            """
    )

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var lease: ToolLeaseOptions
    @Option(help: "The soup to write to.") var soup: String
    @Option(name: .customLong("external-id"), help: "An indexed path that identifies a record, such as Id.")
    var externalId: String?
    @Flag(help: "Mark the records as local changes for sync up.") var local = false
    @Flag(help: .hidden) var holdTransaction = false
    @Argument(help: "Records as JSON objects; read from stdin when omitted.") var records: [String] = []

    func run() async throws {
        var texts = records
        if texts.isEmpty {
            while let line = readLine() {
                if !line.trimmingCharacters(in: .whitespaces).isEmpty { texts.append(line) }
            }
        }
        let parsed = try texts.enumerated().map { index, text in
            do {
                return try JSONObject(parsingObject: text)
            } catch let error as JSONParseError {
                throw CLIError(message: "record \(index + 1): \(error.description)")
            }
        }
        let upsert = RecordUpsert(soup: soup, externalIdPath: externalId, markLocal: local)
        let store = try directory.openStore(create: false, setupTimeout: lease.setupTimeout)
        let check: (StoreReader) throws -> Void = { try upsert.check(parsed, in: $0) }
        let count = try await lease.write(store, tool: "store-upsert", check: check) { transaction in
            try upsert.write(parsed, in: transaction)
            if holdTransaction {
                // Test hook: the transaction stays open until this process is killed.
                CLIOutput.line("holding transaction")
                while true { pause() }
            }
            return parsed.count
        }
        CLIOutput.line("upserted \(count) record(s) into '\(soup)'")
    }
}
