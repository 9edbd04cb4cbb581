import ArgumentParser
import BatonStore

extension StoreSoupCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a soup with indexed paths (adds missing indexes to an existing soup).")

        @OptionGroup var directory: DirectoryOptions
        @OptionGroup var lease: ToolLeaseOptions
        @Argument(help: "The soup's name: 1-64 of A-Z a-z 0-9 . _ -") var name: String
        @Option(
            name: .customLong("index"),
            help: "An indexed path as PATH[:TYPE], TYPE one of string, integer, floating, json1.")
        var indexes: [String] = []

        func run() async throws {
            let specs = try indexes.map(IndexSpec.init(parsing:))
            let name = self.name
            try Names.validate(name, what: "soup name")
            let store = try directory.openStore(create: true, setupTimeout: lease.setupTimeout)
            // A soup that has every index asked for already is a read: no lease, no commit.
            let existing = try await store.read { try $0.soupIfExists(name) }
            if let existing,
                specs.allSatisfy({ spec in existing.indexSpecs.contains { $0.path == spec.path } })
            {
                CLIOutput.line("soup '\(existing.name)' ready with \(existing.indexSpecs.count) index(es)")
                return
            }
            let soup = try await lease.write(store, tool: "soup-create") {
                try $0.registerSoup(name, indexSpecs: specs)
            }
            CLIOutput.line("soup '\(soup.name)' ready with \(soup.indexSpecs.count) index(es)")
        }
    }
}
