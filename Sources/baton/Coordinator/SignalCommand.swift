import ArgumentParser
import BatonCoordinator
import BatonHarness

struct SignalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signal",
        abstract: "Tell a participant it went to the foreground or the background.",
        discussion:
            "Writes D/lifecycle/NAME atomically; `echo background > D/lifecycle/NAME` does the same from any shell."
    )

    @OptionGroup var directory: DirectoryOptions
    @Argument(help: "The participant's name.") var name: String
    @Argument(help: "foreground or background.") var state: String
    @Flag(
        help:
            "Write the signal even if no participant of that name has run in D yet (and make D if it does not exist)."
    )
    var create = false

    func validate() throws {
        guard Lifecycle(rawValue: state) != nil else {
            throw ValidationError("the state must be foreground or background")
        }
    }

    func run() throws {
        try SignalRequest.send(Lifecycle(rawValue: state)!, to: name, in: directory.dir, create: create)
        CLIOutput.line("\(name): \(state)")
    }
}
