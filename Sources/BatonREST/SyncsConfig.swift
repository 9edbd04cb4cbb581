import BatonStore
import BatonSync
import Foundation
import SOQL

/// Named syncs declared in a file of Mobile Sync's `usersyncs.json` / `globalsyncs.json` format
/// (`SFSDKSyncsConfig`), created at start-up by ``SyncManager/createSyncs(_:)``:
///
/// ```json
/// {"syncs": [
///   {"syncName": "accounts", "syncType": "syncDown", "soupName": "accounts",
///    "target": {"type": "soql", "query": "SELECT Id, Name, LastModifiedDate FROM Account"},
///    "options": {"mergeMode": "OVERWRITE"}},
///   {"syncName": "accountsUp", "syncType": "syncUp", "soupName": "accounts",
///    "target": {"createFieldlist": ["Name"]},
///    "options": {"fieldlist": ["Id", "Name", "LastModifiedDate"], "mergeMode": "LEAVE_IF_CHANGED"}}]}
/// ```
///
/// As in Mobile Sync, a sync up's target without a `type` is the standard REST target, and
/// `options` may give `fieldlist` and `mergeMode` (`OVERWRITE`, the default, or
/// `LEAVE_IF_CHANGED`). A sync up names its object with `objectType`, or takes the object of
/// the file's sync down on the same soup (Mobile Sync reads it from each record's
/// `attributes`). Where Mobile Sync would ignore a mistake or crash on it, the file is refused
/// with the line and the field: an unknown key or `syncType`, a key given twice, a missing name
/// or soup, a name used twice, a target key its type does not read (``TargetKeys``) or a value
/// of the wrong kind, a target that cannot be built (a query that is not SOQL, a search that is
/// not SOSL), and a name, soup or id field the engine would refuse (``SyncCreationRules``).
public struct SyncsConfig: Sendable {
    /// One declared sync, its target built.
    public struct Entry: Sendable {
        public enum Target: Sendable {
            case down(any SyncDownTarget)
            case up(any SyncUpTarget)
        }

        public var name: String
        public var soupName: String
        public var target: Target
        public var options: SyncOptions
        /// Where the entry starts in the file (1-based).
        public var line: Int
    }

    /// The syncs, in the file's order.
    public var entries: [Entry]
    /// The work spent finding lines for entries and messages: bytes of the file read to outline
    /// it, plus steps of path walked per look-up. Linear in the file (each byte read twice, a few
    /// steps an entry), however many entries it has.
    package private(set) var locationWork = 0

    /// Reads and checks a config file; targets are built by `factory` (so a bad query is
    /// refused now, with its line).
    ///
    /// - Throws: ``SyncError`` `.invalidTarget` naming the file, line and field.
    public init(contentsOfFile path: String, factory: any SyncTargetFactory) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SyncError(.invalidTarget, "\(path): cannot read the syncs config")
        }
        try self.init(parsing: Array(data), file: path, factory: factory)
    }

    /// Reads and checks a config's bytes, in time linear in their size; `file` names it in
    /// errors. A leading UTF-8 byte-order mark is skipped, as Mobile Sync's loaders
    /// (`NSJSONSerialization`, Android's `org.json`) skip it.
    ///
    /// - Throws: ``SyncError`` `.invalidTarget` naming the file, line and field.
    public init(parsing text: [UInt8], file: String, factory: any SyncTargetFactory) throws {
        let bytes = text.starts(with: Self.byteOrderMark) ? Array(text.dropFirst(3)) : text
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes, maxDepth: 32)
        } catch let error as JSONParseError {
            let (line, column) = JSONLocation.lineAndColumn(ofOffset: error.offset, in: bytes)
            throw SyncError(.invalidTarget, "\(file):\(line):\(column): not JSON: \(error.reason)")
        }
        let reader = Reader(outline: JSONOutline(bytes), file: file)
        if let repeated = reader.outline.repeatedKey {
            throw reader.error(repeated.path, "the key is given twice; give it once", at: repeated.offset)
        }
        guard let syncs = document.value(atPath: "syncs")?.arrayValue else {
            throw reader.error([], "a syncs config is {\"syncs\": [ … ]}")
        }
        try reader.refuseUnknownKeys(document, at: [], allowed: ["syncs"])
        let objectBySoup = Self.sobjectTypesBySoup(syncs)
        var names = Set<String>()
        entries = []
        entries.reserveCapacity(syncs.count)
        for (index, sync) in syncs.enumerated() {
            entries.append(
                try Self.entry(
                    sync, at: [.key("syncs"), .index(index)], names: &names, reader: reader,
                    objectBySoup: objectBySoup, factory: factory))
        }
        locationWork = reader.work
    }

    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The sync at `path`, checked as the engine will check it when it creates it
    /// (``SyncCreationRules``).
    static func entry(
        _ sync: JSONValue, at path: [JSONPathComponent], names: inout Set<String>, reader: Reader,
        objectBySoup: [String: String], factory: any SyncTargetFactory
    ) throws -> Entry {
        guard sync.objectValue != nil else { throw reader.error(path, "each sync is an object") }
        try reader.refuseUnknownKeys(
            sync, at: path, allowed: ["syncName", "syncType", "soupName", "target", "options"])
        let name = try reader.string(sync, "syncName", at: path)
        guard names.insert(name).inserted else {
            throw reader.error(path + [.key("syncName")], "the name '\(name)' is used twice")
        }
        let soupName = try reader.string(sync, "soupName", at: path)
        let typeName = try reader.string(sync, "syncType", at: path)
        guard let type = SyncType(rawValue: typeName) else {
            throw reader.error(path + [.key("syncType")], "'\(typeName)' is not syncDown or syncUp")
        }
        let options = try reader.options(sync.value(atPath: "options"), at: path + [.key("options")])
        let targetPath = path + [.key("target")]
        if sync.value(atPath: "target").map({ $0.objectValue == nil && !$0.isNull }) == true {
            throw reader.error(targetPath, "a target is an object")
        }
        let targetJSON = sync.value(atPath: "target")?.objectValue ?? [:]
        let target = try Self.target(
            targetJSON, of: type, soupName: soupName, at: targetPath, reader: reader,
            objectBySoup: objectBySoup, factory: factory)
        let (idField, children) =
            switch target {
            case .down(let down): (down.idFieldName, down.childrenSoup)
            case .up(let up): (up.idFieldName, nil)
            }
        if let violation = SyncCreationRules.violation(
            name: name, soupName: soupName, idFieldName: idField, children: children)
        {
            let field = Self.path(of: violation.field, in: targetJSON)
            throw reader.error(
                field.inTarget ? targetPath + field.path : path + field.path, violation.message)
        }
        return Entry(
            name: name, soupName: soupName, target: target, options: options, line: reader.line(of: path))
    }

    /// Where a field that breaks a rule is written: in the sync, or in its target.
    static func path(of field: SyncCreationRules.Field, in target: JSONObject) -> (
        path: [JSONPathComponent], inTarget: Bool
    ) {
        switch field {
        case .syncName: ([.key("syncName")], false)
        case .soupName: ([.key("soupName")], false)
        // A parent-children target's id field is its parent's.
        case .idFieldName:
            (target["parent"] == nil ? [.key("idFieldName")] : [.key("parent"), .key("idFieldName")], true)
        case .childrenSoupName: ([.key("children"), .key("soupName")], true)
        case .childrenIdFieldName: ([.key("children"), .key("idFieldName")], true)
        case .childrenParentIdFieldName: ([.key("children"), .key("parentIdFieldName")], true)
        }
    }

    /// The target of a sync of `type`: its keys checked against its type's (``TargetKeys``),
    /// then built by `factory`.
    static func target(
        _ json: JSONObject, of type: SyncType, soupName: String, at path: [JSONPathComponent],
        reader: Reader, objectBySoup: [String: String], factory: any SyncTargetFactory
    ) throws -> Entry.Target {
        var json = json
        let typePath = path + [.key("type")]
        switch type {
        case .syncDown:
            guard let kind = json["type"] else {
                throw reader.error(path, "a sync down target needs a \"type\" (soql)")
            }
            guard let keys = kind.stringValue.flatMap(TargetKeys.syncDown) else {
                throw reader.error(
                    typePath,
                    "\(kind.jsonString.prefix(40)) is not a sync down target type (known: \(RESTTargetFactory.syncDownTypes.joined(separator: ", ")))"
                )
            }
            try reader.check(json, keys: keys, at: path)
        case .syncUp:
            if json["type"] == nil || json["type"]?.isNull == true { json["type"] = "rest" }
            guard let keys = json["type"]?.stringValue.flatMap(TargetKeys.syncUp) else {
                throw reader.error(
                    typePath, "\(json["type"]?.jsonString.prefix(40) ?? "") is not rest or parentChildren")
            }
            try reader.check(json, keys: keys, at: path)
            if json["type"] == "rest", json["objectType"] == nil {
                guard let object = objectBySoup[soupName] else {
                    throw reader.error(
                        path,
                        "give the sync up's \"objectType\", or a sync down on soup '\(soupName)' to take it from"
                    )
                }
                json["objectType"] = .string(object)
            }
        }
        // Mobile Sync's name for a batch size.
        if let maxBatchSize = json["maxBatchSize"], json["batchSize"] == nil {
            json["batchSize"] = maxBatchSize
        }
        do {
            switch type {
            case .syncDown: return .down(try factory.syncDownTarget(from: json))
            case .syncUp: return .up(try factory.syncUpTarget(from: json))
            }
        } catch let error as SyncError {
            throw reader.error(path, error.message)
        }
    }

    /// The object each soup's SOQL sync down reads, for sync ups that do not name theirs.
    static func sobjectTypesBySoup(_ syncs: [JSONValue]) -> [String: String] {
        var objects: [String: String] = [:]
        for sync in syncs where sync.value(atPath: "syncType")?.stringValue == SyncType.syncDown.rawValue {
            guard let soup = sync.value(atPath: "soupName")?.stringValue,
                let query = sync.value(atPath: "target.query")?.stringValue,
                // A query that does not parse gets no index here; its sync reports the error.
                let parsed = try? SOQLQuery(parsing: query)
            else { continue }
            objects[soup] = objects[soup] ?? parsed.object
        }
        return objects
    }
}

extension SyncManager {
    /// Creates the config's syncs that do not exist yet, without running them (status `new`), as
    /// Mobile Sync's `createSyncs` does: a sync whose name exists is left as it is. Returns the
    /// syncs created.
    @discardableResult
    public func createSyncs(_ config: SyncsConfig) async throws -> [SyncState] {
        var created: [SyncState] = []
        for entry in config.entries where try getSyncStatus(name: entry.name) == nil {
            switch entry.target {
            case .down(let target):
                created.append(
                    try await createSyncDown(
                        target: target, options: entry.options, soupName: entry.soupName, name: entry.name))
            case .up(let target):
                created.append(
                    try await createSyncUp(
                        target: target, options: entry.options, soupName: entry.soupName, name: entry.name))
            }
        }
        return created
    }
}
