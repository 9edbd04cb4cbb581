import BatonCoordinator
import BatonREST
import BatonSync

/// The syncs `baton participant` runs, from its `--sync-down NAME:SOUP:SOQL` and
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
                throw CLIError(message: "--sync-down takes NAME:SOUP:SOQL, got '\(spec.prefix(80))'")
            }
            let target = try SoqlSyncDownTarget(client: client, query: parts[2], batchSize: batchSize)
            soupTypes[parts[1]] = target.fetchQuery.object
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
            let target = try RESTSyncUpTarget(client: client, objectType: type)
            syncs.append(
                .up(
                    name: parts[0], soup: parts[1], target: target,
                    options: SyncOptions(mergeMode: upMergeMode)))
        }
        if let configFile {
            let config: SyncsConfig
            do {
                config = try SyncsConfig(
                    contentsOfFile: configFile, factory: RESTTargetFactory(client: client))
            } catch let error as SyncError {
                throw CLIError(message: "--syncs-config: \(error.message)")
            }
            for entry in config.entries {
                guard !syncs.contains(where: { $0.name == entry.name }) else {
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
        }
        return syncs
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
