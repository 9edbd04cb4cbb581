/// A sync-state row that cannot be read whole: a column holds what this version cannot take
/// (options or a target that are not a JSON object, a count that is text), written by hand or by
/// another version. It carries what could be read, the sync's id and name above all, and which
/// column is wrong and how; never what the column holds.
///
/// ``StoreReader/syncStateEntries(status:)`` gives it in the row's place, so one bad row hides no
/// other; ``StoreReader/syncStates(status:)`` and the lookups by id and name throw it.
public struct UnreadableSyncRow: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store-assigned id.
    public var id: Int64
    /// The sync's name, when it reads as text.
    public var name: String?
    /// The stored type, as text (`?` when it is not text).
    public var type: String
    /// The stored status, as text (`?` when it is not text).
    public var status: String
    /// The stored soup name, as text (`?` when it is not text).
    public var soupName: String
    /// The stored error, when it reads as text.
    public var error: String?
    /// What is wrong, said of the sync without naming it: `has options that are not a JSON object
    /// (malformed JSON at byte 1: expected a string key)`.
    public var problem: String

    /// Makes one from what could be read of the row.
    public init(
        id: Int64, name: String?, type: String, status: String, soupName: String, error: String?,
        problem: String
    ) {
        self.id = id
        self.name = name
        self.type = type
        self.status = status
        self.soupName = soupName
        self.error = error
        self.problem = problem
    }

    /// `sync 'accounts' (#2) in the store has options that are not a JSON object (…)`.
    public var description: String { "sync \(Self.label(id: id, name: name)) in the store \(problem)" }

    /// How messages name a sync: `'accounts' (#2)`, or `#2` for an unnamed one.
    public static func label(id: Int64, name: String?) -> String {
        name.map { "'\($0.prefix(64))' (#\(id))" } ?? "#\(id)"
    }
}
