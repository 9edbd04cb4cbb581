import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonREST
import BatonStore
import BatonSync
import Foundation
import Logging
import SOQL

@main
struct Baton: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "A multi-process sync engine: one shared SQLite store, one writer at a time.",
        discussion: """
            Processes that share a directory D share one store (D/store.sqlite). The writer lease \
            (D/writer.lock) says who may write; lifecycle files (D/lifecycle/<name>) say who is in \
            the foreground. Set BATON_LOG_LEVEL=debug for diagnostics on stderr.
            """,
        version: version,
        subcommands: [
            StoreCommand.self, ServeCommand.self, SyncsCommand.self, ParticipantCommand.self,
            SignalCommand.self,
            StatusCommand.self, WaitCommand.self, LeaseCommand.self, WatchCommand.self, DemoCommand.self,
            BenchCommand.self, ChaosCommand.self, SimulateCommand.self, BenchWorkerCommand.self,
        ]
    )

    /// Runs the command and turns every typed error into one line on stderr and a non-zero exit.
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap(
                Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .warning
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as StoreError {
            CLIOutput.fail(error.message)
        } catch let error as JSONParseError {
            CLIOutput.fail(error.description)
        } catch let error as CLIError {
            CLIOutput.fail(error.message, code: error.exitCode)
        } catch let error as CoordinatorError {
            CLIOutput.fail(error.message)
        } catch let error as SyncError {
            CLIOutput.fail(error.description)
        } catch let error as RESTError {
            CLIOutput.fail(error.description)
        } catch let error as SOQLError {
            CLIOutput.fail(error.description)
        } catch let error as ChildProcessError {
            CLIOutput.fail(error.description)
        } catch {
            // ArgumentParser's own: help, version, usage errors (exit 64 with the usage line).
            exit(withError: error)
        }
    }
}
