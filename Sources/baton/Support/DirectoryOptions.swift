import ArgumentParser
import BatonStore
import Logging

/// `--dir D`: the shared directory, common to every command that touches a store.
struct DirectoryOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "The shared directory (store init, soup create and participant create it, mode 0700, if missing)."
    )
    var dir: String

    /// Opens the store; `create: false` refuses a directory with no store yet. Fails (naming the
    /// holder) when another process holds `D/setup.lock` for longer than `setupTimeout`.
    func openStore(
        create: Bool, busyTimeout: Duration = .seconds(10),
        setupTimeout: Duration = SharedStore.defaultSetupTimeout, label: String = "baton"
    ) throws -> SharedStore {
        let directory = try SharedDirectory(path: dir, create: create)
        return try SharedStore.open(
            directory: directory, create: create, busyTimeout: busyTimeout, setupTimeout: setupTimeout,
            logger: Logger(label: label))
    }

    /// Opens the store to read only: nothing in D is created or committed.
    func openStoreForReading(label: String = "baton") throws -> SharedStore {
        try SharedStore.openForReading(
            directory: try SharedDirectory(path: dir, create: false), logger: Logger(label: label))
    }
}
