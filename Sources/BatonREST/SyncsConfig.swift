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
/// with the line and the field: an unknown key or `syncType`, a missing name or soup, a name
/// used twice, a target that cannot be built.
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

    public init(parsing bytes: [UInt8], file: String, factory: any SyncTargetFactory) throws {
        let reader = Reader(bytes: bytes, file: file)
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes, maxDepth: 32)
        } catch let error as JSONParseError {
            let (line, column) = JSONLocation.lineAndColumn(ofOffset: error.offset, in: bytes)
            throw SyncError(.invalidTarget, "\(file):\(line):\(column): not JSON: \(error.reason)")
        }
        guard let syncs = document.value(atPath: "syncs")?.arrayValue else {
            throw reader.error([], "a syncs config is {\"syncs\": [ … ]}")
        }
        try reader.refuseUnknownKeys(document, at: [], allowed: ["syncs"])
        let objectBySoup = Self.sobjectTypesBySoup(syncs)
        var names = Set<String>()
        entries = []
        for (index, sync) in syncs.enumerated() {
            let path: [JSONPathComponent] = [.key("syncs"), .index(index)]
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
            var targetJSON = sync.value(atPath: "target")?.objectValue ?? [:]
            if sync.value(atPath: "target").map({ $0.objectValue == nil && !$0.isNull }) == true {
                throw reader.error(targetPath, "a target is an object")
            }
            let target: Entry.Target
            do {
                switch type {
                case .syncDown:
                    guard targetJSON["type"] != nil else {
                        throw SyncError(.invalidTarget, "a sync down target needs a \"type\" (soql)")
                    }
                    target = .down(try factory.syncDownTarget(from: targetJSON))
                case .syncUp:
                    if targetJSON["type"] == nil { targetJSON["type"] = "rest" }
                    if targetJSON["type"] == "rest", targetJSON["objectType"] == nil {
                        guard let object = objectBySoup[soupName] else {
                            throw SyncError(
                                .invalidTarget,
                                "give the sync up's \"objectType\", or a sync down on soup '\(soupName)' to take it from"
                            )
                        }
                        targetJSON["objectType"] = .string(object)
                    }
                    if let maxBatchSize = targetJSON["maxBatchSize"], targetJSON["batchSize"] == nil {
                        targetJSON["batchSize"] = maxBatchSize
                    }
                    target = .up(try factory.syncUpTarget(from: targetJSON))
                }
            } catch let error as SyncError {
                throw reader.error(targetPath, error.message)
            }
            entries.append(
                Entry(
                    name: name, soupName: soupName, target: target, options: options,
                    line: reader.line(of: path)))
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

    /// Reads values, and names where in the file a value is wrong.
    struct Reader {
        let bytes: [UInt8]
        let file: String

        func line(of path: [JSONPathComponent]) -> Int {
            JSONLocation.offset(of: path, in: bytes).map {
                JSONLocation.lineAndColumn(ofOffset: $0, in: bytes).line
            }
                ?? 1
        }

        /// `file:line: syncs[1].options.mergeMode: message`; the line is the field's, or its
        /// nearest enclosing value's when the field is missing.
        func error(_ path: [JSONPathComponent], _ message: String) -> SyncError {
            var located = path
            var offset = JSONLocation.offset(of: located, in: bytes)
            while offset == nil, !located.isEmpty {
                located.removeLast()
                offset = JSONLocation.offset(of: located, in: bytes)
            }
            let line = JSONLocation.lineAndColumn(ofOffset: offset ?? 0, in: bytes).line
            let field = path.map(\.description).joined().drop { $0 == "." }
            return SyncError(
                .invalidTarget, "\(file):\(line): \(field.isEmpty ? "" : "\(field): ")\(message)")
        }

        func refuseUnknownKeys(_ value: JSONValue, at path: [JSONPathComponent], allowed: Set<String>) throws
        {
            for key in (value.objectValue ?? [:]).keys.sorted() where !allowed.contains(key) {
                throw error(
                    path + [.key(key)], "unknown key (known: \(allowed.sorted().joined(separator: ", ")))")
            }
        }

        func string(_ value: JSONValue, _ key: String, at path: [JSONPathComponent]) throws -> String {
            guard let text = value.value(atPath: key)?.stringValue, !text.isEmpty else {
                throw error(path + [.key(key)], "a non-empty string is needed")
            }
            return text
        }

        /// Mobile Sync's `SFSyncOptions`: `fieldlist` and `mergeMode`; absent means the defaults.
        func options(_ value: JSONValue?, at path: [JSONPathComponent]) throws -> SyncOptions {
            guard let value, !value.isNull else { return SyncOptions() }
            guard value.objectValue != nil else { throw error(path, "options are an object") }
            try refuseUnknownKeys(value, at: path, allowed: ["fieldlist", "mergeMode"])
            var options = SyncOptions()
            if let mode = value.value(atPath: "mergeMode") {
                switch mode.stringValue {
                case "OVERWRITE": options.mergeMode = .overwrite
                case "LEAVE_IF_CHANGED": options.mergeMode = .leaveIfChanged
                default:
                    throw error(
                        path + [.key("mergeMode")], "\(mode) is not \"OVERWRITE\" or \"LEAVE_IF_CHANGED\"")
                }
            }
            if let list = value.value(atPath: "fieldlist") {
                let names = list.arrayValue?.compactMap(\.stringValue)
                guard let names, names.count == list.arrayValue?.count else {
                    throw error(path + [.key("fieldlist")], "a fieldlist is a list of field names")
                }
                options.fieldlist = names
            }
            return options
        }
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
