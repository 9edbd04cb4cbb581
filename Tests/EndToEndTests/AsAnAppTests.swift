import Foundation
import Testing

/// Baton as a dependency of somebody else's package: the embedding guide's code and the
/// NotesPair example compile against the public interface alone, and the example's manifest
/// resolves Baton by URL with version ranges.
@Suite("Baton as an app's dependency", .serialized, .timeLimit(.minutes(10)))
struct AsAnAppTests {
    /// The fenced code blocks of `docs/embedding.md` in `language`, in order.
    static func embeddingBlocks(_ language: String) throws -> [String] {
        let text = try String(contentsOfFile: BuiltModules.root + "/docs/embedding.md", encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```" + language {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("every Swift block of docs/embedding.md compiles as an app's code; its manifest is the example's")
    func embeddingGuideCompiles() async throws {
        let blocks = try Self.embeddingBlocks("swift")
        let manifests = blocks.filter { $0.hasPrefix("// swift-tools-version") }
        let code = blocks.filter { !$0.hasPrefix("// swift-tools-version") }
        try #require(manifests.count == 1, "the guide shows one manifest")
        try #require(code.count >= 4, "the guide's code blocks were not found")
        let manifest = try String(
            contentsOfFile: BuiltModules.root + "/Examples/NotesPair/Package.swift", encoding: .utf8)
        #expect(
            manifests[0] == manifest, "docs/embedding.md's manifest is not Examples/NotesPair/Package.swift")

        let directory = FileManager.default.temporaryDirectory.path + "/baton-embedding-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        for (index, block) in code.enumerated() {
            let file = directory + "/block\(index + 1).swift"
            try block.write(toFile: file, atomically: true, encoding: .utf8)
            files.append(file)
        }
        let diagnostics = try await BuiltModules.typecheckAsAnApp(files, module: "EmbeddingGuide")
        #expect(
            diagnostics == nil, "docs/embedding.md's Swift does not compile cleanly:\n\(diagnostics ?? "")")
    }

    @Test("a use of a package-only declaration fails to compile outside Baton (the check can fail)")
    func packageDeclarationsAreOutOfReach() async throws {
        let file =
            FileManager.default.temporaryDirectory.path + "/baton-package-only-\(UUID().uuidString).swift"
        try "import BatonStore\nfunc probe(_ faults: StorageFaults?) {}\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let diagnostics = try await BuiltModules.typecheckAsAnApp([file], module: "Probe")
        let text = try #require(diagnostics, "a package-only type compiled outside Baton")
        #expect(text.contains("StorageFaults"), "\(text)")
    }

    @Test("the NotesPair example compiles as an app's code: no package-only declaration of Baton's")
    func exampleCompilesOutsideThePackage() async throws {
        let sources = BuiltModules.root + "/Examples/NotesPair/Sources/NotesKit"
        let files = try FileManager.default.contentsOfDirectory(atPath: sources)
            .filter { $0.hasSuffix(".swift") }.map { sources + "/" + $0 }
        try #require(!files.isEmpty)
        let diagnostics = try await BuiltModules.typecheckAsAnApp(files, module: "NotesKit")
        #expect(diagnostics == nil, "NotesKit does not compile as an app's code:\n\(diagnostics ?? "")")
    }

    @Test(
        "the example's manifest resolves Baton by URL with from: ranges, against a copy of this repository tagged with baton's version"
    )
    func exampleResolvesBatonByURL() async throws {
        let version = try await BatonProcess.run(["--version"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        try #require(version.split(separator: ".").count == 3, "baton --version: \(version)")
        let temp = FileManager.default.temporaryDirectory.path + "/baton-by-url-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temp) }
        let copy = temp + "/baton"
        let app = temp + "/app"
        for directory in [copy, app] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        // A git repository holding this working tree (what git would commit), tagged as released.
        let snapshot = """
            set -e
            git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && tar --null -T - -cf -) \
              | tar -xf - -C "$COPY"
            cd "$COPY"
            git init -q
            git add -A
            git -c user.name=baton -c user.email=baton@localhost commit -q -m snapshot
            git tag "$VERSION"
            cp "$ROOT/Examples/NotesPair/Package.swift" "$APP/Package.swift"
            cp -R "$ROOT/Examples/NotesPair/Sources" "$APP/Sources"
            """
        let made = try await BatonProcess(
            ["-c", snapshot],
            environment: ["ROOT": BuiltModules.root, "COPY": copy, "APP": app, "VERSION": version],
            executable: "/bin/sh"
        ).wait(timeout: .seconds(120))
        try #require(made.status == 0, "making the copy failed: \(made.stderr)")

        let manifest = try String(contentsOfFile: app + "/Package.swift", encoding: .utf8)
        #expect(
            !manifest.contains("exact:") && !manifest.contains("path:") && !manifest.contains("revision:"))
        let url = try #require(
            manifest.firstMatch(of: /\.package\(url: "([^"]+\/baton)", from: "([0-9.]+)"\)/),
            "the example does not name Baton by URL with from:")
        // Where an app's copy of Baton lives is a mirror away: here, the local repository.
        let mirror = try await BuiltModules.run(
            "swift",
            [
                "package", "--package-path", app, "config", "set-mirror", "--original", String(url.1),
                "--mirror", "file://" + copy,
            ])
        try #require(mirror.status == 0, "set-mirror failed: \(mirror.stderr)")
        let resolve = try await BuiltModules.run(
            "swift", ["package", "--package-path", app, "--scratch-path", app + "/.build", "resolve"])
        try #require(resolve.status == 0, "the example did not resolve: \(resolve.stderr.suffix(3000))")

        let pins =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: app + "/Package.resolved"))) as? [String: Any]
        let entries = try #require(pins?["pins"] as? [[String: Any]])
        let baton = try #require(
            entries.first { $0["identity"] as? String == "baton" }, "baton is not resolved")
        #expect((baton["state"] as? [String: Any])?["version"] as? String == version)
        // Baton's own dependencies came with it, each at a version its range allows.
        let identities = Set(entries.compactMap { $0["identity"] as? String })
        for dependency in [
            "grdb.swift", "swift-log", "swift-service-lifecycle", "async-http-client", "hummingbird",
        ] {
            #expect(identities.contains(dependency), "\(dependency) did not resolve: \(identities.sorted())")
        }
    }
}
