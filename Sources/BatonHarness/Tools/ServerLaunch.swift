import BatonServer
import Logging

/// What `baton serve` starts: the reference server with its schema (the built-in one, extended
/// by a file) and its seeds.
public enum ServerLaunch {
    /// A server ready to run; every problem with the schema file or a seed is a ``CLIError``.
    public static func make(
        host: String, port: Int, token: String, dataPath: String?, schemaFile: String?,
        clock: ServerClock = .salesforce, seeds: [ServerSeed],
        childPageSize: Int = ReferenceServer.Configuration.defaultChildPageSize,
        deletedRetention: Duration = ReferenceServer.Configuration.defaultDeletedRetention
    ) throws -> ReferenceServer {
        let schema: ServerSchema
        do {
            schema = try schemaFile.map { try ServerSchema(contentsOfFile: $0) } ?? .standard
        } catch let error as SalesforceError {
            throw CLIError(message: "--schema: \(error.message)")
        }
        do {
            let server = try ReferenceServer(
                configuration: .init(
                    host: host, port: port, token: token, dataPath: dataPath, childPageSize: childPageSize,
                    schema: schema, clock: clock, deletedRetention: deletedRetention),
                logger: Logger(label: "baton.serve"))
            for seed in seeds {
                try server.seed(type: seed.type, count: seed.count, timeStamps: seed.timeStamps)
            }
            return server
        } catch let error as SalesforceError {
            throw CLIError(message: "\(error.errorCode): \(error.message)")
        }
    }

    /// What `baton serve` prints once it listens (without `--json`).
    public static func banner(url: String, token: String, seeds: [String]) -> [String] {
        var lines = ["baton reference server listening on \(url)", "token: \(token)"]
        if !seeds.isEmpty { lines.append("seeded: \(seeds.joined(separator: ", "))") }
        lines.append(
            "try: curl -H 'Authorization: Bearer \(token)' '\(url)/services/data/v60.0/query?q=SELECT+Id,Name+FROM+Account+LIMIT+5'"
        )
        return lines
    }
}
