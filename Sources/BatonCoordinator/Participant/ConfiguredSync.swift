import BatonStore
import BatonSync

/// A sync a participant runs whenever it becomes the writer: created on its first foreground,
/// reSynced on later ones unless the restart already resumed it.
public enum ConfiguredSync: Sendable {
    /// With `cleanGhosts`, clean resync ghosts is queued right after the sync down each time.
    case down(
        name: String, soup: String, target: any SyncDownTarget, options: SyncOptions,
        cleanGhosts: Bool = false)
    /// A sync up of `soup`'s local changes to `target`.
    case up(name: String, soup: String, target: any SyncUpTarget, options: SyncOptions)

    /// The name of the sync, and of its sync state in the store.
    public var name: String {
        switch self {
        case .down(let name, _, _, _, _), .up(let name, _, _, _): return name
        }
    }
}
