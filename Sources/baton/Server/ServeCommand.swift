import ArgumentParser
import BatonHarness
import BatonServer
import BatonStore

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the reference REST server (the Salesforce REST subset Mobile Sync uses).",
        discussion: """
            Serves /services/data/vNN.0 for every version v31.0-v62.0, listed at /services/data/ \
            (query, sobjects, composite/sobjects), and /admin (seed, touch, delete, stats, faults), \
            with bearer-token auth. Stops on Ctrl-C or SIGTERM.

            The server knows User, Account, Contact and Opportunity with their usual fields and \
            relationships; unknown types and fields answer INVALID_TYPE / INVALID_FIELD as \
            Salesforce does. --schema FILE adds types and fields: \
            {"objects": [{"name": "Invoice__c", "fields": [{"name": "Amount__c", "type": "currency"}, \
            {"name": "Account__c", "type": "reference", "referenceTo": "Account", \
            "childRelationshipName": "Invoices__r"}]}]}. --seed declares a new type it names.

            Records are stamped on Salesforce's clock by default: LastModifiedDate in whole \
            seconds, one stamp for every record a request writes, comparisons ignoring \
            milliseconds. --clock ideal gives each record its own millisecond stamp instead.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(help: "Bearer token clients must send; generated when omitted.") var token: String?
    @Option(
        name: .customLong("seed"),
        help: "Seed records as TYPE=COUNT[:TIMESTAMPS] (fewer time stamps than records makes ties).")
    var seeds: [String] = []
    @Option(help: "SQLite file for the server's records; in memory when omitted.") var data: String?
    @Option(help: "JSON file of sObject types and fields to add to the built-in schema (see above).")
    var schema: String?
    @Option(
        help:
            "Children a parent's subquery result holds before it pages with its own nextRecordsUrl (Salesforce: 200)."
    )
    var childPageSize = ReferenceServer.Configuration.defaultChildPageSize
    @Option(
        help: ArgumentHelp(
            "How records are stamped: salesforce (whole seconds, one stamp a request) or ideal (a unique millisecond each).",
            valueName: "salesforce|ideal"))
    var clock: ServerClock = .salesforce
    @Option(
        help:
            "Days the delete log answers getDeleted (sObject Get Deleted) for a deleted id; a window starting earlier is refused with INVALID_REPLICATION_DATE (Salesforce: 15)."
    )
    var deletedRetentionDays: Double = 15
    @Flag(help: "Print {\"url\",\"token\"} as the first stdout line.") var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let token, token.isEmpty || token.contains(where: { $0.isWhitespace }) {
            throw ValidationError("--token must be non-empty and contain no spaces")
        }
        guard childPageSize >= 1 else { throw ValidationError("--child-page-size must be at least 1") }
        guard deletedRetentionDays > 0, deletedRetentionDays <= 3650 else {
            throw ValidationError("--deleted-retention-days must be more than 0 and at most 3650")
        }
        do {
            _ = try seeds.map(ServerSeed.init(parsing:))
        } catch let error as CLIError {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let token = self.token ?? ReferenceServer.generateToken()
        let server = try ServerLaunch.make(
            host: host, port: port, token: token, dataPath: data, schemaFile: schema, clock: clock,
            seeds: try seeds.map(ServerSeed.init(parsing:)), childPageSize: childPageSize,
            deletedRetention: .milliseconds(Int64(deletedRetentionDays * 86_400_000)))
        let (asJSON, seeds) = (json, seeds)
        try await server.run { url in
            if asJSON {
                CLIOutput.json(["url": .string(url), "token": .string(token)])
            } else {
                for line in ServerLaunch.banner(url: url, token: token, seeds: seeds) { CLIOutput.line(line) }
            }
        }
    }
}

extension ServerClock: ExpressibleByArgument {}
