/// What a process's writes go through: the fence of the writer lease it holds, or a handle
/// opened to write outside any lease. Neither can be made by hand: a ``LeaseFence`` comes only
/// from the writer lease, an ``UnfencedStore`` only from ``UnfencedStore/open(directory:create:busyTimeout:logger:)``.
///
/// The sync engine holds one while it may write (`SyncManager` in BatonSync).
public enum WriteAccess: Sendable, Hashable {
    /// Under the writer lease: every write is fenced by it.
    case lease(LeaseFence)
    /// Outside any lease, through a handle opened for that (tools run with `--unleased`, a store
    /// only one process ever writes, benchmarks). Its commits are recorded as made outside the
    /// lease, and `baton lease check` reports them.
    case unfenced(UnfencedStore)

    /// The fencing epoch, when under a lease.
    public var epoch: Int64? {
        if case .lease(let fence) = self { return fence.epoch }
        return nil
    }

    /// The store this access writes to.
    public var store: SharedStore {
        switch self {
        case .lease(let fence): fence.store
        case .unfenced(let handle): handle.store
        }
    }

    /// Runs `body` in one write transaction through this access: the `write` of ``SharedStore``
    /// (fenced) or of ``UnfencedStore``.
    @discardableResult
    public func write<T>(
        deadline: ContinuousClock.Instant? = nil, _ body: (StoreTransaction) throws -> T
    ) throws -> T {
        switch self {
        case .lease(let fence): try fence.store.write(fence, deadline: deadline, body)
        case .unfenced(let handle): try handle.write(deadline: deadline, body)
        }
    }

    /// The async form of ``write(deadline:_:)``.
    @discardableResult
    public func write<T: Sendable>(
        deadline: ContinuousClock.Instant? = nil, _ body: @escaping @Sendable (StoreTransaction) throws -> T
    ) async throws -> T {
        switch self {
        case .lease(let fence): try await fence.store.write(fence, deadline: deadline, body)
        case .unfenced(let handle): try await handle.write(deadline: deadline, body)
        }
    }
}
