import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    /// The JSON a script reads (`baton status --json`, `D/participants/NAME.json`) against the
    /// schema tables in docs/cli.md: nothing written that the tables do not list, nothing listed
    /// as always there that is not written.
    @Suite("status JSON matches its documented schema", .serialized, .timeLimit(.minutes(3)))
    struct StatusSchemaTests {
        /// A documented field: its path (`writer.epoch`, `retrying[].name`) and whether it may be
        /// absent.
        struct Field: Hashable {
            var path: String
            var optional: Bool
        }

        /// The two schema tables of docs/cli.md's "JSON output": `status --json`'s, then the
        /// participant file's.
        static func documentedSchemas() throws -> (status: [Field], participant: [Field]) {
            let text = try String(contentsOfFile: BuiltModules.root + "/docs/cli.md", encoding: .utf8)
            let start = try #require(text.range(of: "## JSON output"))
            let section = text[start.upperBound...].prefix { _ in true }
            let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
            var tables: [[Field]] = []
            var inTable = false
            for line in section[..<end].split(separator: "\n", omittingEmptySubsequences: false) {
                guard line.hasPrefix("| `") else {
                    inTable = false
                    continue
                }
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                guard cells.count >= 2 else { continue }
                if !inTable { tables.append([]) }
                inTable = true
                tables[tables.count - 1].append(
                    Field(
                        path: cells[0].trimmingCharacters(in: ["`"]), optional: cells[1].contains("optional"))
                )
            }
            try #require(
                tables.count == 2, "docs/cli.md's JSON output has \(tables.count) schema tables, not 2")
            return (tables[0], tables[1])
        }

        /// Every field path in `value`: nested objects by `.`, array elements by `[]`; the
        /// counts under `syncs` are keyed by status, so not fields.
        static func paths(_ value: JSONValue, prefix: String = "") -> Set<String> {
            var result: Set<String> = []
            if let object = value.objectValue {
                for (key, child) in object {
                    let path = prefix.isEmpty ? key : prefix + "." + key
                    result.insert(path)
                    if path != "syncs" { result.formUnion(paths(child, prefix: path)) }
                }
            } else if let array = value.arrayValue {
                for element in array { result.formUnion(paths(element, prefix: prefix + "[]")) }
            }
            return result
        }

        @Test(
            "status --json and D/participants/NAME.json of a writer with a failing sync, a refused signal and a sync it cannot read"
        )
        func schemas() async throws {
            let (statusSchema, participantSchema) = try Self.documentedSchemas()
            let f = try await CoordinatorFixture(records: 5)
            // A sync the server refuses: it fails, and the participant publishes its retry.
            try await f.start(
                "host", role: "host", lifecycle: "foreground", query: "SELECT Id FROM NoSuchObject",
                extra: ["--retry-delay", "30"])
            #expect(try await f.wait(["--writer", "host"]))
            try await f.waitForStatus("host's retry") { statuses in
                statuses.contains { $0.name == "host" && !$0.retrying.isEmpty }
            }
            // Junk in its lifecycle file: refused, and published as its refused signal.
            try Data("sideways\n".utf8).write(to: URL(fileURLWithPath: f.dir + "/lifecycle/host"))
            try await f.waitForStatus("host's refused signal") { statuses in
                statuses.contains { $0.name == "host" && $0.refusedSignal != nil && !$0.retrying.isEmpty }
            }

            let file = try JSONValue(
                parsing: try Data(contentsOf: URL(fileURLWithPath: f.dir + "/participants/host.json")))
            let written = Self.paths(file)
            let participantPaths = Set(participantSchema.map(\.path))
            #expect(
                written.subtracting(participantPaths).isEmpty,
                "undocumented: \(written.subtracting(participantPaths))")
            let required = Set(participantSchema.filter { !$0.optional }.map(\.path))
            #expect(
                required.subtracting(written).isEmpty,
                "documented, not written: \(required.subtracting(written))")

            // A sync written by another version: `status` lists it as one it cannot read.
            try storeSQL(
                f.dir,
                """
                INSERT INTO sync_state (name, type, target, options, soupName, status)
                VALUES ('sideways', 'syncSideways', '{}', '{}', 'accounts', 'done')
                """)
            // A process that is not Baton locks writer.lock: a POSIX lock from this one, beside the
            // host's flock (the two kinds do not conflict on Linux).
            let foreign = open(f.dir + "/writer.lock", O_RDWR | O_CLOEXEC)
            #expect(foreign >= 0)
            defer { close(foreign) }
            var region = Glibc.flock()
            region.l_type = Int16(F_WRLCK)
            region.l_whence = Int16(SEEK_SET)
            #expect(fcntl(foreign, F_SETLK, &region) == 0)
            let status = try await BatonProcess.run(["status", "--dir", f.dir, "--json"])
            #expect(status.status == 0, "\(status.stderr)")
            let shown = Self.paths(try JSONValue(parsing: status.stdout))
            // A participant in the status carries its file's fields too.
            let statusPaths = Set(statusSchema.map(\.path)).union(
                participantPaths.map { "participants[]." + $0 })
            #expect(shown.subtracting(statusPaths).isEmpty, "undocumented: \(shown.subtracting(statusPaths))")
            let always = Set(statusSchema.filter { !$0.optional }.map(\.path))
            #expect(always.subtracting(shown).isEmpty, "documented, not shown: \(always.subtracting(shown))")
            try await f.finish()
        }
    }
}
