import ArgumentParser

struct StoreInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create (or migrate) the store in a shared directory.",
        discussion: "Safe to run from several processes at once: setup is serialized by D/setup.lock."
    )

    @OptionGroup var directory: DirectoryOptions

    func run() throws {
        let store = try directory.openStore(create: true)
        CLIOutput.line("store ready: \(store.directory.storePath)")
    }
}
