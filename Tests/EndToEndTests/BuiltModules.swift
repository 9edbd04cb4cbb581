import Foundation
import Testing

/// The modules the test build made, and the toolchain, used to compile code as a package that
/// depends on Baton would compile it: against Baton's public interface only.
enum BuiltModules {
    /// The repository's root (this file is Tests/EndToEndTests/BuiltModules.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// `Modules` in the build directory the test bundle lives in.
    static func modulesDirectory() -> String? {
        var url = Bundle.main.bundleURL
        while url.pathComponents.count > 1 {
            let candidate = url.appendingPathComponent("Modules/BatonStore.swiftmodule").path
            if FileManager.default.fileExists(atPath: candidate) {
                return url.appendingPathComponent("Modules").path
            }
            url.deleteLastPathComponent()
        }
        return nil
    }

    /// The target triple the build used.
    static var triple: String {
        #if arch(arm64)
            "aarch64-unknown-linux-gnu"
        #else
            "x86_64-unknown-linux-gnu"
        #endif
    }

    /// What the compiler needs to find every module of the build: the Swift modules, and the C
    /// modules (their module maps and headers) of each C target the build compiled, as SwiftPM
    /// passes them.
    static func searchArguments() throws -> [String] {
        let modules = try #require(modulesDirectory(), "no Modules directory beside the test bundle")
        let build = URL(fileURLWithPath: modules).deletingLastPathComponent().path
        let files = FileManager.default
        let checkouts =
            try [build + "/../../checkouts", build + "/../checkouts", root + "/.build/checkouts"]
            .first { files.fileExists(atPath: $0) }
            .map { base in try files.contentsOfDirectory(atPath: base).map { base + "/" + $0 } } ?? []
        var arguments = ["-I", modules]
        var maps: [String] = []
        // System library targets (GRDB's SQLite): a module map of their own, nothing compiled.
        for checkout in checkouts {
            for target in (try? files.contentsOfDirectory(atPath: checkout + "/Sources")) ?? [] {
                let map = checkout + "/Sources/" + target + "/module.modulemap"
                if files.fileExists(atPath: map) { maps.append(map) }
            }
        }
        for entry in try files.contentsOfDirectory(atPath: build) where entry.hasSuffix(".build") {
            let target = String(entry.dropLast(".build".count))
            let sources = checkouts.map { $0 + "/Sources/" + target }.first { files.fileExists(atPath: $0) }
            if let include = sources.map({ $0 + "/include" }), files.fileExists(atPath: include) {
                arguments += ["-Xcc", "-I" + include]
            }
            let candidates =
                [build + "/" + entry + "/module.modulemap"]
                + (sources.map { [$0 + "/include/module.modulemap", $0 + "/module.modulemap"] } ?? [])
            if let map = candidates.first(where: { files.fileExists(atPath: $0) }), !maps.contains(map) {
                maps.append(map)
            }
        }
        return arguments + maps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] }
    }

    /// Runs a tool of the toolchain (`swift`, `swiftc`) with `arguments`.
    static func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(300)) async throws
        -> ProcessResult
    {
        // SWIFT_EXEC_BUILD, when set, is the `swift` the suite was built with.
        if let swift = ProcessInfo.processInfo.environment["SWIFT_EXEC_BUILD"] {
            let path = URL(fileURLWithPath: swift).deletingLastPathComponent().appendingPathComponent(tool)
                .path
            return try await BatonProcess(arguments, executable: path).wait(timeout: timeout)
        }
        return try await BatonProcess([tool] + arguments, executable: "/usr/bin/env").wait(timeout: timeout)
    }

    /// Type-checks `files` as one module of another package, which imports Baton's libraries and
    /// so sees their public declarations only (never their `package` ones). Returns the
    /// compiler's diagnostics, empty when the files compile cleanly.
    static func typecheckAsAnApp(_ files: [String], module: String) async throws -> String? {
        let result = try await run(
            "swiftc",
            [
                "-typecheck", "-parse-as-library", "-swift-version", "6", "-module-name", module,
                "-package-name", module.lowercased(), "-target", triple,
            ] + searchArguments() + files)
        return result.status == 0 && !result.stderr.contains("warning:") ? nil : result.stderr + result.stdout
    }
}
