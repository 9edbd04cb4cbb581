import ArgumentParser

struct StoreInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create (or migrate) the store in a shared directory.",
        discussion: """
            Safe to run from several processes at once: setup is serialized by D/setup.lock. \
            Also puts back the write guards (the triggers that refuse writes from anything but \
            Baton) that something else dropped or changed, naming their tables; run `baton lease \
            check --strict` first to see what they let through.
            """
    )

    @OptionGroup var directory: DirectoryOptions

    func run() throws {
        let store = try directory.openStore(create: true)
        let restored = try store.restoreWriteGuards()
        if !restored.isEmpty {
            CLIOutput.line("write guards restored on: \(restored.joined(separator: ", "))")
        }
        CLIOutput.line("store ready: \(store.directory.storePath)")
    }
}
