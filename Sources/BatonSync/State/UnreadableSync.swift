import BatonStore

/// A sync in the store that this version cannot run: its row cannot be read whole (options or a
/// target that are not a JSON object; see ``UnreadableSyncRow``), or it holds a type or status
/// this version does not know. Written by another version or by hand.
///
/// The writer sets such a sync aside when it meets it (queued, restarted, reSynced): it is
/// marked `failed` with ``cause`` as its error, and every other sync runs as usual. Once the row
/// is repaired, its next reSync runs it.
public struct UnreadableSync: Sendable, Hashable {
    /// The store-assigned id.
    public var id: Int64
    /// The sync's name, when it reads as text.
    public var name: String?
    /// The stored type, as text.
    public var type: String
    /// The stored status, as text (`failed` once it was set aside).
    public var status: String
    /// The stored soup name, as text.
    public var soupName: String
    /// The stored error: the last failure, or ``cause``'s message once it was set aside.
    public var error: String?
    /// What is wrong, said of the sync without naming it: `has an unknown type 'syncSideways'
    /// (this version knows syncDown, syncUp)`.
    public var problem: String

    /// `unreadableSync`, naming the sync by id and name and saying what is wrong (never what
    /// its columns hold): the error it is set aside with.
    public var cause: SyncError {
        SyncError(
            .unreadableSync,
            "sync \(UnreadableSyncRow.label(id: id, name: name)) in the store \(problem); it was written by another version or by hand, and does not run until it is repaired"
        )
    }

    /// What could be read of a row that cannot be read whole.
    init(_ row: UnreadableSyncRow) {
        self.init(
            id: row.id, name: row.name, type: row.type, status: row.status, soupName: row.soupName,
            error: row.error, problem: row.problem)
    }

    /// A row read whole whose type or status this version does not know.
    init(_ row: SyncStateRow, problem: String) {
        self.init(
            id: row.id, name: row.name, type: row.type, status: row.status, soupName: row.soupName,
            error: row.error, problem: problem)
    }

    init(
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
}

extension UnreadableSync: Encodable {
    /// What `baton syncs --json` shows of it: the columns it could read, and `unreadable`, what
    /// is wrong.
    enum CodingKeys: String, CodingKey {
        case id, name, type, status, error, unreadable
        case soupName = "soup"
    }

    /// Encodes the keys above (`name` and `error` only when there is one).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(soupName, forKey: .soupName)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encode(problem, forKey: .unreadable)
    }
}
