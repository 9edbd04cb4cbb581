import ArgumentParser

struct StoreSoupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soup",
        abstract: "Register or drop a soup.",
        subcommands: [Create.self, Drop.self]
    )
}
