import BatonStore
import BatonSync

/// How a metadata or layout fetch uses the copy cached in the store (Mobile Sync's
/// `SFSDKFetchMode`).
public enum FetchMode: Sendable, Hashable, CaseIterable {
    /// The cached copy, or nil. Never the network, so it also works in a process that is not
    /// the writer.
    case cacheOnly
    /// The cached copy; the server (cached on the way) when there is none.
    case cacheFirst
    /// The server, cached on the way; the cached copy when the sync cannot run or fails (no
    /// network, or this process is not the writer). The error when there is no cached copy.
    case serverFirst
}

/// Mobile Sync's `SFMetadataSyncManager`: an object's `describe`, fetched with a
/// ``MetadataSyncDownTarget`` into the soup `sfdcMetadata` (one record per object, `Id` the
/// object's name) and read back as ``SObjectMetadata``.
///
/// ```swift
/// let metadata = MetadataSyncManager(syncManager: manager, client: client)
/// let account = try await metadata.fetchMetadata(for: "Account", mode: .cacheFirst)
/// print(account?.keyPrefix ?? "not cached")  // 001
/// ```
///
/// Each server fetch runs (or re-runs) one named sync down per object, `sfdcMetadata.Account`,
/// where Mobile Sync creates a new sync each time. The manager's writer rules apply: in a
/// process that does not hold the lease only the cache answers.
public struct MetadataSyncManager: Sendable {
    /// The soup the descriptions are cached in (Mobile Sync's name).
    public static let soupName = "sfdcMetadata"
    public let syncManager: SyncManager
    public let client: RESTClient
    let cache: DescriptionCache

    public init(syncManager: SyncManager, client: RESTClient) {
        self.syncManager = syncManager
        self.client = client
        cache = DescriptionCache(manager: syncManager, soupName: Self.soupName)
    }

    /// `objectType`'s description, from the cache or the server as `mode` says; nil when
    /// `cacheOnly` finds nothing cached.
    ///
    /// - Throws: `invalidTarget` for a name that is not an object type; the sync's error when the
    ///   server was needed and the sync failed (or could not start) with nothing cached.
    public func fetchMetadata(for objectType: String, mode: FetchMode) async throws -> SObjectMetadata? {
        let target = try MetadataSyncDownTarget(client: client, objectType: objectType)
        return try await cache.fetch(recordId: objectType, target: target, mode: mode).map(
            SObjectMetadata.init)
    }
}

/// Mobile Sync's `SFLayoutSyncManager`: an object's UI API layout, fetched with a
/// ``LayoutSyncDownTarget`` into the soup `sfdcLayouts` (one record per object and layout type,
/// `Id` `Account-Compact`) and read back as ``SObjectLayout``.
///
/// Fetch modes, the named sync per layout and the writer rules are those of
/// ``MetadataSyncManager``.
public struct LayoutSyncManager: Sendable {
    /// The soup the layouts are cached in (Mobile Sync's name).
    public static let soupName = "sfdcLayouts"
    public let syncManager: SyncManager
    public let client: RESTClient
    let cache: DescriptionCache

    public init(syncManager: SyncManager, client: RESTClient) {
        self.syncManager = syncManager
        self.client = client
        cache = DescriptionCache(manager: syncManager, soupName: Self.soupName)
    }

    /// `objectType`'s layout of `layoutType` (`Compact`, or the server's default `Full` when
    /// nil), from the cache or the server as `mode` says; nil when `cacheOnly` finds nothing.
    ///
    /// - Throws: as ``MetadataSyncManager/fetchMetadata(for:mode:)``.
    public func fetchLayout(for objectType: String, layoutType: String? = nil, mode: FetchMode) async throws
        -> SObjectLayout?
    {
        let target = try LayoutSyncDownTarget(client: client, objectType: objectType, layoutType: layoutType)
        return try await cache.fetch(recordId: target.recordId, target: target, mode: mode).map(
            SObjectLayout.init)
    }
}

/// The cache both managers share: one soup indexed on `Id`, one record per description, one
/// named sync down per record.
struct DescriptionCache: Sendable {
    let manager: SyncManager
    let soupName: String
    var store: SharedStore { manager.store }

    func fetch(recordId: String, target: any SyncDownTarget, mode: FetchMode) async throws -> JSONObject? {
        switch mode {
        case .cacheOnly:
            return try cached(recordId)
        case .cacheFirst:
            if let record = try cached(recordId) { return record }
            return try await fetchFromServer(recordId, target)
        case .serverFirst:
            do {
                return try await fetchFromServer(recordId, target)
            } catch {
                if let record = try cached(recordId) { return record }
                throw error
            }
        }
    }

    func cached(_ recordId: String) throws -> JSONObject? {
        guard try store.registeredSoup(soupName, indexSpecs: [IndexSpec(path: "Id", type: .string)]) != nil
        else { return nil }
        let query = SoupQuery(where: [.exact("Id", .string(recordId))], limit: 1)
        return try store.query(query, in: soupName).first?.record
    }

    /// Runs the record's named sync (creating it the first time) and reads the record back.
    func fetchFromServer(_ recordId: String, _ target: any SyncDownTarget) async throws -> JSONObject? {
        let name = "\(soupName).\(recordId)"
        let final: SyncState?
        if let existing = try await manager.getSyncStatus(name: name) {
            if existing.status == .running {
                final = await manager.waitForSync(id: existing.id)  // a fetch already under way
            } else {
                final = await manager.waitForSync(id: try await manager.reSync(id: existing.id).id)
            }
        } else {
            let sync = try await manager.syncDown(
                target: target, options: SyncOptions(mergeMode: .overwrite), soupName: soupName, name: name)
            final = await manager.waitForSync(id: sync.id)
        }
        guard let final, final.status == .done else {
            let why =
                final.map { "ended \($0.status.rawValue)\($0.error.map { ": \($0)" } ?? "")" } ?? "was lost"
            throw SyncError(.syncFailed, "the sync '\(name)' \(why)")
        }
        return try cached(recordId)
    }
}

/// An object's description as Mobile Sync's `SFMetadata` reads it; `rawData` holds the whole
/// answer.
public struct SObjectMetadata: Sendable, Hashable {
    public let rawData: JSONObject

    public init(_ rawData: JSONObject) { self.rawData = rawData }

    public var name: String? { rawData["name"]?.stringValue }
    public var label: String? { rawData["label"]?.stringValue }
    public var labelPlural: String? { rawData["labelPlural"]?.stringValue }
    /// The first three characters of every id of this type (`001` for Account).
    public var keyPrefix: String? { rawData["keyPrefix"]?.stringValue }
    public var networkScopeFieldName: String? { rawData["networkScopeFieldName"]?.stringValue }
    /// One description per field (`name`, `type`, `length`, …).
    public var fields: [JSONObject]? { rawData["fields"]?.arrayValue?.compactMap(\.objectValue) }
    public var childRelationships: [JSONObject]? {
        rawData["childRelationships"]?.arrayValue?.compactMap(\.objectValue)
    }
    public var urls: JSONObject? { rawData["urls"]?.objectValue }

    public var activateable: Bool { flag("activateable") }
    public var compactLayoutable: Bool { flag("compactLayoutable") }
    public var createable: Bool { flag("createable") }
    public var custom: Bool { flag("custom") }
    public var customSetting: Bool { flag("customSetting") }
    public var deletable: Bool { flag("deletable") }
    public var deprecatedAndHidden: Bool { flag("deprecatedAndHidden") }
    public var feedEnabled: Bool { flag("feedEnabled") }
    public var hasSubtypes: Bool { flag("hasSubtypes") }
    public var isSubtype: Bool { flag("isSubtype") }
    public var layoutable: Bool { flag("layoutable") }
    public var mergeable: Bool { flag("mergeable") }
    public var mruEnabled: Bool { flag("mruEnabled") }
    public var queryable: Bool { flag("queryable") }
    public var replicateable: Bool { flag("replicateable") }
    public var retrieveable: Bool { flag("retrieveable") }
    public var searchLayoutable: Bool { flag("searchLayoutable") }
    public var searchable: Bool { flag("searchable") }
    public var triggerable: Bool { flag("triggerable") }
    public var undeletable: Bool { flag("undeletable") }
    public var updateable: Bool { flag("updateable") }

    func flag(_ key: String) -> Bool { rawData[key]?.boolValue == true }
}

/// A UI API layout as Mobile Sync's `SFLayout` reads it: sections of rows of items.
public struct SObjectLayout: Sendable, Hashable {
    public let rawData: JSONObject

    public init(_ rawData: JSONObject) { self.rawData = rawData }

    /// The server's id of the layout (`00h…`); the cached record's `Id` is `TYPE-LAYOUTTYPE`.
    public var id: String? { rawData["id"]?.stringValue }
    public var layoutType: String? { rawData["layoutType"]?.stringValue }
    public var mode: String? { rawData["mode"]?.stringValue }
    public var sections: [Section]? {
        rawData["sections"]?.arrayValue?.compactMap(\.objectValue).map(Section.init(rawData:))
    }

    public struct Section: Sendable, Hashable {
        public let rawData: JSONObject
        public var id: String? { rawData["id"]?.stringValue }
        public var heading: String? { rawData["heading"]?.stringValue }
        public var collapsible: Bool { rawData["collapsible"]?.boolValue == true }
        public var useHeading: Bool { rawData["useHeading"]?.boolValue == true }
        public var columns: Int? { rawData["columns"]?.intValue.map(Int.init) }
        public var rows: Int? { rawData["rows"]?.intValue.map(Int.init) }
        public var layoutRows: [Row]? {
            rawData["layoutRows"]?.arrayValue?.compactMap(\.objectValue).map(Row.init(rawData:))
        }
    }

    public struct Row: Sendable, Hashable {
        public let rawData: JSONObject
        public var layoutItems: [Item]? {
            rawData["layoutItems"]?.arrayValue?.compactMap(\.objectValue).map(Item.init(rawData:))
        }
    }

    public struct Item: Sendable, Hashable {
        public let rawData: JSONObject
        public var label: String? { rawData["label"]?.stringValue }
        public var editableForNew: Bool { rawData["editableForNew"]?.boolValue == true }
        public var editableForUpdate: Bool { rawData["editableForUpdate"]?.boolValue == true }
        public var required: Bool { rawData["required"]?.boolValue == true }
        public var sortable: Bool { rawData["sortable"]?.boolValue == true }
        public var lookupIdApiName: String? { rawData["lookupIdApiName"]?.stringValue }
        public var layoutComponents: JSONValue? { rawData["layoutComponents"] }
    }
}
