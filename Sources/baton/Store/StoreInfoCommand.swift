import ArgumentParser
import BatonStore

struct StoreInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show soups, record counts, the change sequence and an integrity check.",
        discussion: "Read-only and safe while participants run: it never waits for the writer."
    )

    @OptionGroup var directory: DirectoryOptions
    @Flag(help: "Print one JSON object instead of text.") var json = false

    func run() throws {
        let store = try directory.openStore(create: false)
        let info = try store.info()
        if json {
            CLIOutput.json(info.jsonValue)
            return
        }
        CLIOutput.line("store:           \(info.path)")
        CLIOutput.line("change sequence: \(info.changeSequence)")
        CLIOutput.line("lease epoch:     \(info.leaseEpoch)")
        CLIOutput.line("integrity:       \(info.integrity)")
        let syncs = info.syncCounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        CLIOutput.line("syncs:           \(syncs.isEmpty ? "none" : syncs.joined(separator: " "))")
        if info.soups.isEmpty {
            CLIOutput.line("soups:           none")
        } else {
            CLIOutput.line("soups:")
            for soup in info.soups {
                let indexes = soup.indexSpecs.map { "\($0.path):\($0.type.rawValue)" }.joined(separator: ", ")
                CLIOutput.line("  \(soup.name)  \(soup.count) records  [\(indexes)]")
            }
        }
    }
}

extension StoreInfo {
    var jsonValue: JSONValue {
        .object([
            "path": .string(path),
            "changeSequence": .int(changeSequence),
            "leaseEpoch": .int(leaseEpoch),
            "integrity": .string(integrity),
            "syncs": .object(syncCounts.mapValues { .int(Int64($0)) }),
            "soups": .array(
                soups.map { soup in
                    .object([
                        "name": .string(soup.name), "count": .int(Int64(soup.count)),
                        "indexSpecs": .array(
                            soup.indexSpecs.map {
                                .object(["path": .string($0.path), "type": .string($0.type.rawValue)])
                            }),
                    ])
                }),
        ])
    }
}

struct StoreInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create (or migrate) the store in a shared directory.",
        discussion: "Safe to run from several processes at once: setup is serialized by D/setup.lock."
    )

    @OptionGroup var directory: DirectoryOptions

    func run() throws {
        let store = try directory.openStore(create: true)
        CLIOutput.line("store ready: \(store.directory.storePath)")
    }
}
