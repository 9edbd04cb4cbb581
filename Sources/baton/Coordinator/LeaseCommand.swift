import ArgumentParser

struct LeaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease",
        abstract: "Inspect the writer lease's history.",
        subcommands: [History.self, Check.self]
    )
}
