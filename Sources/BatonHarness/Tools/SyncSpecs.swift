import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation

/// The syncs `baton participant` runs, from its `--sync-down NAME:SOUP:TARGET` and
/// `--sync-up NAME:SOUP[:TYPE]` options and its `--syncs-config FILE` (Mobile Sync's
/// `usersyncs.json` format, after the options' syncs).
public struct SyncSpecs: Sendable {
    public var downs: [String]
    public var ups: [String]
    /// A syncs config file (``SyncsConfig``).
    public var configFile: String?
    /// Names of sync downs to follow with clean resync ghosts.
    public var cleanGhosts: [String] = []
    public var batchSize: Int?
    public var downMergeMode = MergeMode.overwrite
    public var upMergeMode = MergeMode.overwrite

    public init(downs: [String], ups: [String]) {
        self.downs = downs
        self.ups = ups
    }

    /// The configured syncs; a sync up without TYPE takes the object of the sync down on its soup.
    public func syncs(client: RESTClient) throws -> [ConfiguredSync] {
        var syncs: [ConfiguredSync] = []
        var soupTypes: [String: String] = [:]
        for spec in downs {
            let parts = spec.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, !parts[2].isEmpty else {
                throw CLIError(message: "--sync-down takes NAME:SOUP:TARGET, got '\(spec.prefix(80))'")
            }
            let target = try Self.downTarget(parts[2], soup: parts[1], client: client, batchSize: batchSize)
            try Self.requireCreatable(
                name: parts[0], soup: parts[1], idField: target.idFieldName, children: target.childrenSoup,
                option: "--sync-down", spec: spec, taken: syncs)
            if let soql = target as? SoqlSyncDownTarget { soupTypes[parts[1]] = soql.fetchQuery.object }
            syncs.append(
                .down(
                    name: parts[0], soup: parts[1], target: target,
                    options: SyncOptions(mergeMode: downMergeMode),
                    cleanGhosts: cleanGhosts.contains(parts[0])))
        }
        for spec in ups {
            let parts = spec.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count >= 2, let type = parts.count == 3 ? parts[2] : soupTypes[parts[1]] else {
                throw CLIError(
                    message:
                        "--sync-up takes NAME:SOUP[:TYPE] (TYPE is needed when no --sync-down uses SOUP), got '\(spec.prefix(80))'"
                )
            }
            let target: any SyncUpTarget
            if type.lowercased().hasPrefix("tree:") {
                do {
                    target = try RESTTargetFactory(client: client).syncUpTarget(
                        from: try Self.treeJSON(type, soup: parts[1]))
                } catch let error as SyncError {
                    throw CLIError(message: "--sync-up: \(error.message)")
                }
            } else {
                do {
                    target = try RESTSyncUpTarget(client: client, objectType: type)
                } catch let error as SyncError {
                    throw CLIError(message: "--sync-up: \(error.message)")
                }
            }
            try Self.requireCreatable(
                name: parts[0], soup: parts[1], idField: target.idFieldName, children: nil,
                option: "--sync-up", spec: spec, taken: syncs)
            syncs.append(
                .up(
                    name: parts[0], soup: parts[1], target: target,
                    options: SyncOptions(mergeMode: upMergeMode)))
        }
        if let configFile { syncs += try configSyncs(configFile, client: client, taken: syncs) }
        return syncs
    }

    /// The syncs of the ``configFile``, none named as one of `taken`.
    func configSyncs(_ configFile: String, client: RESTClient, taken: [ConfiguredSync]) throws
        -> [ConfiguredSync]
    {
        let config: SyncsConfig
        do {
            config = try SyncsConfig(contentsOfFile: configFile, factory: RESTTargetFactory(client: client))
        } catch let error as SyncError {
            throw CLIError(message: "--syncs-config: \(error.message)")
        }
        let takenNames = Set(taken.map(\.name))
        var syncs: [ConfiguredSync] = []
        for entry in config.entries {
            guard !takenNames.contains(entry.name) else {
                throw CLIError(
                    message:
                        "--syncs-config: \(configFile):\(entry.line): the sync '\(entry.name)' is also given by an option"
                )
            }
            switch entry.target {
            case .down(let target):
                syncs.append(
                    .down(
                        name: entry.name, soup: entry.soupName, target: target, options: entry.options,
                        cleanGhosts: cleanGhosts.contains(entry.name)))
            case .up(let target):
                syncs.append(
                    .up(name: entry.name, soup: entry.soupName, target: target, options: entry.options))
            }
        }
        return syncs
    }

    /// Refuses an option's sync that the engine could not create (``SyncCreationRules``, the
    /// rules it applies when it creates a sync), or whose name an earlier option took, naming
    /// the option, its spec and the part.
    static func requireCreatable(
        name: String, soup: String, idField: String, children: ChildrenSoup?, option: String,
        spec: String, taken: [ConfiguredSync]
    ) throws {
        let quoted = "\(option) '\(spec.prefix(80))'"
        if let violation = SyncCreationRules.violation(
            name: name, soupName: soup, idFieldName: idField, children: children)
        {
            let part =
                switch violation.field {
                case .syncName: "NAME"
                case .soupName: "SOUP"
                case .idFieldName: "the target's id field"
                case .childrenSoupName: "CHILD_SOUP"
                case .childrenIdFieldName: "the children's id field"
                case .childrenParentIdFieldName: "PARENT_ID_FIELD"
                }
            throw CLIError(message: "\(quoted): \(part): \(violation.message)")
        }
        guard !taken.contains(where: { $0.name == name }) else {
            throw CLIError(message: "\(quoted): NAME: the sync '\(name)' is given twice")
        }
    }
}

extension SyncSpecs {
    /// A `--sync-down` target: SOQL (`SELECT …`), or `sosl:FIND …`, `mru:TYPE:FIELD,FIELD`,
    /// `refresh:TYPE:FIELD,FIELD` (of the records already in the soup), `metadata:TYPE`,
    /// `layout:TYPE[:Full|Compact]`, or a parent-children ``treeJSON(_:soup:)``.
    static func downTarget(_ text: String, soup: String, client: RESTClient, batchSize: Int?) throws
        -> any SyncDownTarget
    {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(
            String.init)
        let kind = parts[0].lowercased()
        func fields(_ index: Int) -> JSONValue {
            .array(
                (parts.count > index ? parts[index] : "").split(separator: ",").map {
                    .string($0.trimmingCharacters(in: .whitespaces))
                })
        }
        var json: JSONObject
        switch kind {
        case "sosl":
            json = ["type": "sosl", "query": .string(text.dropFirst(5).trimmingCharacters(in: .whitespaces))]
        case "mru", "refresh":
            guard parts.count == 3 else {
                throw CLIError(
                    message:
                        "--sync-down's \(kind) target is \(kind):TYPE:FIELD,FIELD, got '\(text.prefix(80))'")
            }
            json = ["type": .string(kind), "sobjectType": .string(parts[1]), "fieldlist": fields(2)]
            if kind == "refresh" { json["soupName"] = .string(soup) }
        case "tree": json = try treeJSON(text, soup: soup)
        case "metadata": json = ["type": "metadata", "sobjectType": .string(parts.count > 1 ? parts[1] : "")]
        case "layout":
            json = ["type": "layout", "sobjectType": .string(parts.count > 1 ? parts[1] : "")]
            if parts.count > 2 { json["layoutType"] = .string(parts[2]) }
        default:
            do {
                return try SoqlSyncDownTarget(client: client, query: text, batchSize: batchSize)
            } catch let error as SyncError {
                throw CLIError(message: "--sync-down: \(error.message)")
            }
        }
        do {
            return try RESTTargetFactory(client: client).syncDownTarget(from: json)
        } catch let error as SyncError {
            throw CLIError(message: "--sync-down: \(error.message)")
        }
    }
}

extension SyncSpecs {
    /// The parts of a `tree:` spec, in order.
    static let treeSpec =
        "tree:PARENT_TYPE:PARENT_FIELDS:CHILD_TYPE:CHILDREN_RELATIONSHIP:CHILD_SOUP:PARENT_ID_FIELD:CHILD_FIELDS[:lookup|master-detail]"

    /// A parent-children target's JSON (down or up) in one line: the parents of PARENT_TYPE in the
    /// sync's soup with their children in CHILD_SOUP, e.g.
    /// `tree:Account:Name:Contact:Contacts:contacts:AccountId:LastName,Email:master-detail`.
    /// FIELDS are comma-separated; the relationship is a lookup unless told otherwise. Other
    /// options (a parent filter, id and date fields) need a syncs config.
    static func treeJSON(_ text: String, soup: String) throws -> JSONObject {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 8 || parts.count == 9 else {
            throw CLIError(message: "a tree target is \(treeSpec), got '\(text.prefix(120))'")
        }
        func fields(_ index: Int) -> JSONValue {
            .array(
                parts[index].split(separator: ",").map { .string($0.trimmingCharacters(in: .whitespaces)) })
        }
        let relationship: String
        switch parts.count == 9 ? parts[8].lowercased() : "lookup" {
        case "lookup": relationship = "LOOKUP"
        case "master-detail": relationship = "MASTER_DETAIL"
        default:
            throw CLIError(
                message: "a tree target's relationship is lookup or master-detail, got '\(parts[8])'")
        }
        return [
            "type": "parentChildren", "relationshipType": .string(relationship),
            "parent": ["sobjectType": .string(parts[1]), "soupName": .string(soup)],
            "parentFieldlist": fields(2),
            "children": [
                "sobjectType": .string(parts[3]), "sobjectTypePlural": .string(parts[4]),
                "soupName": .string(parts[5]), "parentIdFieldName": .string(parts[6]),
            ],
            "childrenFieldlist": fields(7),
        ]
    }
}

/// `overwrite` or `leave-if-changed` on the command line.
public enum MergeModeArgument: String, CaseIterable, Sendable {
    case overwrite
    case leaveIfChanged = "leave-if-changed"

    public var mode: MergeMode {
        switch self {
        case .overwrite: .overwrite
        case .leaveIfChanged: .leaveIfChanged
        }
    }
}
