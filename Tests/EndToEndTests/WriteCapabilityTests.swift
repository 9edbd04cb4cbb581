import BatonJSON
import Foundation
import Testing

/// The single-writer promise by construction, read off the libraries' public interface as an
/// app that depends on Baton sees it (the symbol graph of the built modules, public symbols
/// only): the only ways to get a write transaction take the lease's fence or an explicitly
/// opened unfenced handle, and nothing public can mint a fence.
@Suite("Who may write: the public interface", .serialized)
struct WriteCapabilityTests {
    /// One public symbol: its kind, path (`SharedStore.write(_:deadline:_:)`) and declaration.
    struct Symbol {
        var kind: String
        var path: String
        var declaration: String
        /// It has a doc comment of its own.
        var documented = false
        /// The compiler made it (a conformance's `hashValue`), so it has no source to document.
        var synthesized = false
        /// `File.swift:LINE`.
        var location = ""
    }

    /// The public symbols of `module`, from the modules the test build made.
    static func publicSymbols(_ module: String) async throws -> [Symbol] {
        let output = FileManager.default.temporaryDirectory.path + "/baton-symbols-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let arguments =
            [
                "symbolgraph-extract", "-module-name", module, "-minimum-access-level", "public",
                "-output-dir", output, "-target", BuiltModules.triple,
            ] + (try BuiltModules.searchArguments())
        let result = try await BuiltModules.run("swift", arguments, timeout: .seconds(120))
        try #require(result.status == 0, "symbolgraph-extract failed: \(result.stderr.suffix(2000))")
        let data = try Data(contentsOf: URL(fileURLWithPath: output + "/\(module).symbols.json"))
        let graph = try JSONValue(parsing: data)
        return (graph.value(atPath: "symbols")?.arrayValue ?? []).map { symbol in
            let path = (symbol.value(atPath: "pathComponents")?.arrayValue ?? []).compactMap(\.stringValue)
            let fragments = (symbol.value(atPath: "declarationFragments")?.arrayValue ?? [])
                .compactMap { $0.value(atPath: "spelling")?.stringValue }
            let file =
                symbol.value(atPath: "location.uri")?.stringValue.map { URL(string: $0)?.path ?? $0 } ?? ""
            let line = (symbol.value(atPath: "location.position.line")?.intValue).map { $0 + 1 } ?? 0
            return Symbol(
                kind: symbol.value(atPath: "kind.identifier")?.stringValue ?? "",
                path: path.joined(separator: "."), declaration: fragments.joined(),
                documented: symbol.value(atPath: "docComment") != nil,
                synthesized: symbol.value(atPath: "identifier.precise")?.stringValue?.contains(
                    "::SYNTHESIZED::")
                    ?? false,
                location: file.isEmpty ? "" : "\(file.split(separator: "/Sources/").last ?? ""):\(line)")
        }
    }

    @Test("BatonStore: no public way to mint a fence, no public unleased write, no public lease bookkeeping")
    func store() async throws {
        let symbols = try await Self.publicSymbols("BatonStore")
        try #require(symbols.contains { $0.path == "SharedStore.write(_:deadline:_:)" })
        let initializers = symbols.filter { $0.kind == "swift.init" }.map(\.path)
        #expect(!initializers.contains { $0.hasPrefix("LeaseFence.") }, "LeaseFence has a public initializer")
        #expect(
            !initializers.contains { $0.hasPrefix("UnfencedStore.") },
            "UnfencedStore can be made without opening it")
        #expect(!initializers.contains { $0.hasPrefix("StoreTransaction.") || $0.hasPrefix("StoreReader.") })
        // Every public entry point that hands out a write transaction.
        let writers = symbols.filter { symbol in
            symbol.kind.hasSuffix("method") && symbol.declaration.contains("(StoreTransaction)")
        }
        for writer in writers {
            switch writer.path {
            case "SharedStore.write(_:deadline:_:)":
                #expect(writer.declaration.contains("_ fence: LeaseFence"), "\(writer.declaration)")
            case "UnfencedStore.write(deadline:_:)", "WriteAccess.write(deadline:_:)":
                break
            default:
                Issue.record(
                    "a public write outside the lease's fence and UnfencedStore: \(writer.declaration)")
            }
        }
        let cases = symbols.filter { $0.kind == "swift.enum.case" && $0.path.hasPrefix("WriteAccess.") }
        #expect(Set(cases.map(\.path)) == ["WriteAccess.lease(_:)", "WriteAccess.unfenced(_:)"])
        let names = symbols.map(\.path)
        for forbidden in [
            "unleased", "Unleased", "takeOverLease", "recordLeaseEpoch", "beginLeaseEpoch", "endLeaseEpoch",
            "StorageFaults", "ForeignWriteLock",
        ] {
            #expect(!names.contains { $0.contains(forbidden) }, "public: \(forbidden)")
        }
    }

    @Test(
        "BatonSync and BatonCoordinator: the engine and the lease cannot be handed a write right from outside"
    )
    func engineAndCoordinator() async throws {
        let sync = try await Self.publicSymbols("BatonSync")
        let managerInits = sync.filter { $0.kind == "swift.init" && $0.path.hasPrefix("SyncManager.") }
        try #require(!managerInits.isEmpty)
        for initializer in managerInits {
            // The store alone (not the writer), or an unfenced handle: never a bare access value.
            #expect(!initializer.declaration.contains("WriteAccess"), "\(initializer.declaration)")
        }
        #expect(!sync.contains { $0.path.contains("reintroduce") || $0.path.contains("SyncHooks") })
        let recover = try #require(sync.first { $0.path.hasPrefix("SyncManager.recoverInterruptedSyncs") })
        #expect(recover.declaration.contains("WriteAccess"), "crash recovery must take the write access")

        let coordinator = try await Self.publicSymbols("BatonCoordinator")
        let heldInits = coordinator.filter {
            $0.kind == "swift.init" && $0.path.hasPrefix("WriterLease.Held.")
        }
        #expect(heldInits.isEmpty, "WriterLease.Held can be made outside the lease")
    }
}
