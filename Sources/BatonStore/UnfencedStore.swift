import Foundation
import Logging

/// A store handle that writes outside the writer lease, on purpose: opened separately from any
/// ``SharedStore`` a participant uses, and named so that every write through it says what it is.
///
/// For tools run with `--unleased`, a store that one process alone ever writes, benchmarks and
/// chaos runs. Every commit is recorded in the commit log as made outside the lease:
/// `baton lease check` reports it, always as a violation when somebody held the lease then, and
/// with `--strict` in any case. An app whose processes share the store writes through the lease
/// (`Participant.write`, or `WriterLease.withLease` and the fenced `SharedStore.write`).
///
/// ```swift
/// let unfenced = try UnfencedStore.open(directory: SharedDirectory(path: "/tmp/solo"), logger: logger)
/// try unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
/// try unfenced.upsert(["Id": "001", "Name": "Acme"], into: "accounts", externalIdPath: "Id")
/// let manager = SyncManager(unfenced: unfenced, targetFactory: factory)
/// ```
public final class UnfencedStore: Sendable, Hashable {
    /// The store this handle writes to: read through it, or hand it to what reads.
    public let store: SharedStore

    init(store: SharedStore) {
        self.store = store
    }

    /// Opens the store in `directory` (creating and migrating it if needed) for writes outside
    /// the lease. See ``SharedStore/open(directory:create:busyTimeout:setupTimeout:logger:)``.
    public static func open(
        directory: SharedDirectory, create: Bool = true, busyTimeout: Duration = .seconds(10), logger: Logger
    ) throws -> UnfencedStore {
        try open(directory: directory, create: create, busyTimeout: busyTimeout, faults: nil, logger: logger)
    }

    /// ``open(directory:create:busyTimeout:logger:)`` with test hooks (tests and chaos only).
    package static func open(
        directory: SharedDirectory, create: Bool = true, busyTimeout: Duration = .seconds(10),
        faults: StorageFaults?, logger: Logger
    ) throws -> UnfencedStore {
        UnfencedStore(
            store: try SharedStore.open(
                directory: directory, create: create, busyTimeout: busyTimeout, faults: faults, logger: logger
            ))
    }

    /// The write access this handle grants (for a `SyncManager` that writes outside the lease).
    public var access: WriteAccess { .unfenced(self) }

    /// Runs `body` in one `IMMEDIATE` write transaction outside any lease and bumps the change
    /// sequence; the commit is recorded as unleased.
    ///
    /// - Parameters:
    ///   - deadline: when given, a wait for a lock held by another process ends there (the
    ///     store's busy timeout applies too).
    ///   - body: the writes, in one transaction; an error it throws rolls them all back.
    /// - Throws: ``StoreError``; the transaction rolled back whole.
    @discardableResult
    public func write<T>(deadline: ContinuousClock.Instant? = nil, _ body: (StoreTransaction) throws -> T)
        throws
        -> T
    {
        try store.counted { try store.writeHere(.unfenced, deadline: deadline, body) }
    }

    /// The async form of ``write(deadline:_:)``: runs on the store's writer queue, where it may
    /// wait in SQLite's busy handler for a lock held by another process.
    @discardableResult
    public func write<T: Sendable>(
        deadline: ContinuousClock.Instant? = nil, _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        try await store.writeAsync(.unfenced, deadline: deadline, body)
    }

    /// Registers a soup: a read when it exists with these index specs already, else a write
    /// outside the lease. See ``StoreTransaction/registerSoup(_:indexSpecs:)``.
    @discardableResult
    public func registerSoup(_ name: String, indexSpecs: [IndexSpec]) throws -> SoupDescription {
        if let existing = try store.registeredSoup(name, indexSpecs: indexSpecs) { return existing }
        return try write { try $0.registerSoup(name, indexSpecs: indexSpecs) }
    }

    /// Upserts one record in its own transaction. See
    /// ``StoreTransaction/upsert(_:into:entryId:externalIdPath:)``.
    @discardableResult
    public func upsert(
        _ record: JSONObject, into soupName: String, entryId: Int64? = nil, externalIdPath: String? = nil
    ) throws -> SoupEntry {
        try write { try $0.upsert(record, into: soupName, entryId: entryId, externalIdPath: externalIdPath) }
    }

    /// Closes the store's connections.
    public func close() throws {
        try store.close()
    }

    public static func == (lhs: UnfencedStore, rhs: UnfencedStore) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
