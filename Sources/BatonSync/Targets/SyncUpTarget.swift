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
