/// A sync the writer set aside because it cannot run it: its row cannot be read, holds a type
/// or status this version does not know, or could not be read at all. It is marked `failed` with
/// ``error`` as its error (once that write commits; the manager keeps trying until it does) and
/// every other sync goes on. ``SyncManager/setAsideSyncs()`` reports each one.
public struct SetAsideSync: Sendable, Hashable {
    /// The store-assigned id.
    public var id: Int64
    /// The sync's name, when it is known.
    public var name: String?
    /// Why, naming the sync by id and name (never what its columns hold): `unreadableSync`.
    public var error: SyncError

    package init(id: Int64, name: String?, error: SyncError) {
        self.id = id
        self.name = name
        self.error = error
    }
}
