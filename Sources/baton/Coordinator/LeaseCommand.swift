import ArgumentParser

struct LeaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease",
        abstract: "Inspect the writer lease's history, and set how much of it is kept.",
        subcommands: [History.self, Check.self, Limit.self]
    )
}
