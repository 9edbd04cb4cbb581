import ArgumentParser
import BatonStore
import Foundation

struct StoreSoupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soup",
        abstract: "Register or drop a soup.",
        subcommands: [Create.self, Drop.self]
    )

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
            let store = try directory.openStore(create: true)
            let name = self.name
            let soup = try await lease.write(store, tool: "soup-create") {
                try $0.registerSoup(name, indexSpecs: specs)
            }
            CLIOutput.line("soup '\(soup.name)' ready with \(soup.indexSpecs.count) index(es)")
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop a soup and all its records.")

        @OptionGroup var directory: DirectoryOptions
        @OptionGroup var lease: ToolLeaseOptions
        @Argument(help: "The soup's name.") var name: String

        func run() async throws {
            let store = try directory.openStore(create: false)
            let name = self.name
            try await lease.write(store, tool: "soup-drop") { try $0.dropSoup(name) }
            CLIOutput.line("soup '\(name)' dropped")
        }
    }
}
