import ArgumentParser

struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Inspect and edit the shared store directly.",
        subcommands: [
            StoreInfoCommand.self, StoreInitCommand.self, StoreSoupCommand.self, StoreUpsertCommand.self,
            StoreQueryCommand.self,
        ]
    )
}
