import ArgumentParser
import BatonHarness

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the writer, the participants and sync counts of a shared directory."
    )

    @OptionGroup var directory: DirectoryOptions
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let snapshot = try CoordinatorSnapshot.read(directory.dir)
        if json {
            try CLIOutput.json(snapshot)
        } else {
            for line in snapshot.lines { CLIOutput.line(line) }
        }
    }
}
