import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore
import Foundation

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
        let shared: SharedDirectory
        do {
            shared = try SharedDirectory(path: directory.dir, create: create)
        } catch let error as StoreError where error.code == .directoryUnavailable && !create {
            throw CLIError(
                message:
                    "\(error.message)\n(no shared directory at \(directory.dir): check --dir, or pass --create to make it)"
            )
        }
        // A mistyped name would otherwise be written and wait, unnoticed, for a participant that
        // never comes.
        let known =
            FileManager.default.fileExists(atPath: shared.lifecyclePath + "/" + name)
            || FileManager.default.fileExists(atPath: shared.participantsPath + "/\(name).json")
        guard known || create else {
            let names = ParticipantStatus.readAll(in: shared).map(\.name)
            let list =
                names.isEmpty ? "none has published a status yet" : "known: " + names.joined(separator: ", ")
            throw CLIError(
                message:
                    "no participant named '\(name)' in \(shared.path) (\(list)); check the name, or pass --create to signal one that has not started yet"
            )
        }
        do {
            try LifecycleSignal.write(Lifecycle(rawValue: state)!, directory: shared, name: name)
        } catch let error as CoordinatorError {
            throw CLIError(message: error.message)
        }
        CLIOutput.line("\(name): \(state)")
    }
}
