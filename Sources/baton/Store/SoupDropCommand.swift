import ArgumentParser

extension StoreSoupCommand {
    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop a soup and all its records.")

        @OptionGroup var directory: DirectoryOptions
        @OptionGroup var lease: ToolLeaseOptions
        @Argument(help: "The soup's name.") var name: String

        func run() async throws {
            let store = try directory.openStore(create: false, setupTimeout: lease.setupTimeout)
            let name = self.name
            try await lease.write(store, tool: "soup-drop", check: { _ = try $0.soup(name) }) {
                try $0.dropSoup(name)
            }
            CLIOutput.line("soup '\(name)' dropped")
        }
    }
}
