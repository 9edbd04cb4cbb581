import ArgumentParser
import BatonCoordinator
import BatonHarness
import BatonStore
import Foundation
import Logging

/// `--timeout` and `--unleased`: how a writing subcommand shares the store with participants.
///
/// A tool writes as a participant does: it waits for the writer lease, its transaction is fenced
/// by the lease's epoch, and the lease history names it (`tool.<command>`). `--unleased` skips
/// the lease, for an empty store or a repair; `baton lease check` then reports the commit, and
/// flags it when a participant held the lease at the time.
struct ToolLeaseOptions: ParsableArguments {
    @Option(
        help:
            "Seconds to wait for the writer lease while a participant holds it (and, before that, for D/setup.lock while another process opens the store)."
    )
    var timeout: Double = 30
    @Flag(
        help:
            "Write without taking the writer lease (an empty store, or a repair while no participant runs); lease check reports such commits."
    )
    var unleased = false

    /// How long opening the store waits for `D/setup.lock`: `--timeout` too.
    var setupTimeout: Duration { .milliseconds(Int64(timeout * 1000)) }

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else {
            throw ValidationError("--timeout must be between 0 and 86400 seconds")
        }
    }

    /// Runs `body` in one transaction under the lease (as `tool`), or, when asked, through a
    /// handle opened to write outside it.
    ///
    /// `check` runs first, as a read, before any wait for the lease: what it refuses (a soup
    /// that does not exist, input that does not fit the soup) fails at once, not after the
    /// lease's timeout with the holder blamed. `body` runs the same checks again in its
    /// transaction, where they are final.
    func write<T: Sendable>(
        _ store: SharedStore, tool: String, check: (StoreReader) throws -> Void = { _ in },
        _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        try store.read(check)
        if unleased {
            let unfenced = try UnfencedStore.open(
                directory: store.directory, create: false, logger: Logger(label: "baton.\(tool)"))
            // The write's own outcome is what the tool reports; a failed close loses nothing.
            defer { try? unfenced.close() }
            return try await unfenced.write(body)
        }
        let lease = try WriterLease(directory: store.directory, store: store, name: "tool.\(tool)")
        do {
            return try await lease.withLease(timeout: .milliseconds(Int64(timeout * 1000))) { held in
                try await store.write(held.fence, body)
            }
        } catch let error as CoordinatorError {
            throw CLIError(message: error.message)
        }
    }
}
