import BatonStore

/// A local change to send.
public struct LocalChange: Sendable {
    public enum Kind: Sendable, Hashable {
        case create
        case update
        case delete
    }

    public var entryId: Int64
    public var kind: Kind
    /// The server id (nil for creates).
    public var serverId: String?
    /// The fields to send (no local flags, no server-managed fields).
    public var fields: JSONObject

    public init(entryId: Int64, kind: Kind, serverId: String?, fields: JSONObject) {
        self.entryId = entryId
        self.kind = kind
        self.serverId = serverId
        self.fields = fields
    }
}

/// What the server did with one local change.
public enum SyncUpOutcome: Sendable, Hashable {
    /// Created (or found by its external id); the server id.
    case created(String)
    case updated
    case deleted
    /// The record is gone on the server.
    case missingOnServer
    /// The server refused the record; the message goes to `__last_error__`.
    case failed(String)
    /// A child refused because its parent is deleted on the server (`ENTITY_IS_DELETED` on the
    /// parent's lookup).
    case parentMissing
}

/// Where a sync up sends local changes (Mobile Sync's `SyncUpTarget`).
public protocol SyncUpTarget: Sendable {
    var json: JSONObject { get }
    var idFieldName: String { get }
    var modificationDateFieldName: String { get }
    /// The field holding the client-generated external id that makes creates idempotent.
    var externalIdFieldName: String { get }
    /// Changes sent per call.
    var batchSize: Int { get }
    /// The fields a create sends (Mobile Sync's `createFieldlist`); `nil`: the sync's
    /// `fieldlist`, or every field.
    var createFieldlist: [String]? { get }
    /// The fields an update sends (`updateFieldlist`); `nil`: the sync's `fieldlist`, or every
    /// field.
    var updateFieldlist: [String]? { get }
    /// Sends one batch; returns one outcome per change, in order. Throws only when the whole
    /// batch could not be sent (connection lost, cancelled).
    func send(_ changes: [LocalChange]) async throws -> [SyncUpOutcome]
    /// The server's modification time stamps for `ids` (absent: deleted on the server).
    func fetchModificationTimeStamps(ids: [String]) async throws -> [String: Int64]
    /// A local record's modification time stamp (as last fetched), in ms since 1970.
    func modificationTimeStamp(of record: JSONObject) -> Int64?
}

extension SyncUpTarget {
    public var createFieldlist: [String]? { nil }
    public var updateFieldlist: [String]? { nil }
}

/// A parent and the children sent with it, in one call: the parent's create or update first,
/// then the children, the parent's delete last.
public struct TreeChange: Sendable {
    /// The parent's own change; nil when only its children changed.
    public var parent: LocalChange?
    /// The parent's server id, when it has one (not for a create).
    public var parentServerId: String?
    public var children: [LocalChange]

    public init(parent: LocalChange?, parentServerId: String?, children: [LocalChange]) {
        self.parent = parent
        self.parentServerId = parentServerId
        self.children = children
    }
}

/// What the server did with a ``TreeChange``.
public struct TreeOutcome: Sendable, Hashable {
    public var parent: SyncUpOutcome?
    /// One per child, in order.
    public var children: [SyncUpOutcome]

    public init(parent: SyncUpOutcome?, children: [SyncUpOutcome]) {
        self.parent = parent
        self.children = children
    }
}

/// A sync up target that sends each parent with its children (Mobile Sync's
/// `SFParentChildrenSyncUpTarget`): the children of a created parent are linked to it in the same
/// call, and the manager saves both soups' outcomes in one transaction.
public protocol TreeSyncUpTarget: SyncUpTarget {
    var childrenSoup: ChildrenSoup { get }
    /// Master-detail: the server deletes the children with their parent, so a parent's delete
    /// goes alone and its local children go with it.
    var deletesChildrenWithParent: Bool { get }
    /// The fields a child's create sends (`nil`: every field).
    var childrenCreateFieldlist: [String]? { get }
    /// The fields a child's update sends (`nil`: every field).
    var childrenUpdateFieldlist: [String]? { get }
    /// Sends one tree. Throws only when the call as a whole failed.
    func sendTree(_ tree: TreeChange) async throws -> TreeOutcome
    /// The server's modification stamps of a parent and its children, by id (the parent absent:
    /// deleted).
    func fetchTreeTimeStamps(parentId: String) async throws -> [String: Int64]
    /// A local child's modification time stamp (as last fetched).
    func childModificationTimeStamp(of record: JSONObject) -> Int64?
}
