import ArgumentParser
import BatonCoordinator
import BatonStore

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

    func validate() throws {
        guard Lifecycle(rawValue: state) != nil else {
            throw ValidationError("the state must be foreground or background")
        }
    }

    func run() throws {
        let shared = try SharedDirectory(path: directory.dir)
        do {
            try LifecycleSignal.write(Lifecycle(rawValue: state)!, directory: shared, name: name)
        } catch let error as CoordinatorError {
            throw CLIError(message: error.message)
        }
        CLIOutput.line("\(name): \(state)")
    }
}
