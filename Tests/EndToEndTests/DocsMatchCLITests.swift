import Foundation
import Testing

/// The documents name only commands and options that the built `baton` knows: each `baton …`
/// in README.md, docs/ and the example's README is checked against `baton … --help`.
@Suite("The docs match the CLI")
struct DocsMatchCLITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// What `--help` says of one command: its subcommands and its options.
    struct Help {
        var subcommands: Set<String>
        var options: Set<String>
    }

    /// Reads `baton <path> --help`, and that of every subcommand below it.
    static func helps(_ path: [String] = [], into all: inout [[String]: Help]) async throws {
        let result = try await BatonProcess.run(path + ["--help"])
        try #require(result.status == 0, "baton \(path.joined(separator: " ")) --help: \(result.stderr)")
        var help = Help(subcommands: [], options: ["--help", "-h"])
        var section = ""
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if let first = line.first, first.isUppercase, line.hasSuffix(":") { section = String(line) }
            let words = line.split(separator: " ")
            guard let word = words.first, line.hasPrefix("  "), !line.hasPrefix("    ") || section == ""
            else {
                continue
            }
            // Subcommand names are lowercase words (not the closing "See 'baton help …'").
            if section == "SUBCOMMANDS:", word.allSatisfy({ $0.isLowercase || $0 == "-" }) {
                help.subcommands.insert(String(word))
            }
            if section == "OPTIONS:" {
                for option in words.prefix(3) where option.hasPrefix("-") {
                    help.options.insert(
                        String(option.split(separator: "/").first ?? option).trimmingCharacters(in: [","]))
                }
                for case let option in words where option.hasPrefix("--") && option.contains("/") {
                    for part in option.split(separator: "/") { help.options.insert(String(part)) }
                }
            }
        }
        all[path] = help
        guard path.count < 3 else { return }
        for subcommand in help.subcommands where subcommand != "help" && all[path + [subcommand]] == nil {
            try await helps(path + [subcommand], into: &all)
        }
    }

    /// Every `baton` invocation in the documents: the words after `baton`, up to the end of its
    /// line or code span.
    static func invocations() throws -> [(file: String, words: [String])] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs")
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var found: [(String, [String])] = []
        for file in ["README.md", "Examples/NotesPair/README.md"] + docs {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                var rest = Substring(line)
                while let range = rest.range(of: "baton ") {
                    let before = rest[..<range.lowerBound].last
                    rest = rest[range.upperBound...]
                    // `baton` the word (not `$baton`, `/baton-`, a path or `baton:`).
                    if let before, before.isLetter || before.isNumber || "$-_./\"".contains(before) {
                        continue
                    }
                    let span = rest.prefix { $0 != "`" && $0 != "|" && $0 != ";" && $0 != ")" }
                    let words = span.split(separator: " ").map(String.init)
                    guard let first = words.first, first.first?.isLowercase == true else { continue }
                    found.append((file, words))
                }
            }
        }
        return found
    }

    @Test("every baton command and option named in README.md, docs/ and the example's README exists")
    func docsNameOnlyWhatExists() async throws {
        var all: [[String]: Help] = [:]
        try await Self.helps(into: &all)
        let commands = try #require(all[[]]?.subcommands)
        #expect(commands.contains("participant") && commands.contains("lease"))
        let invocations = try Self.invocations()
        #expect(invocations.count > 20, "found only \(invocations.count) invocations")
        for (file, words) in invocations {
            // The command: the words that name subcommands, from the top.
            var path: [String] = []
            for word in words {
                guard let help = all[path], help.subcommands.contains(word) else { break }
                path.append(word)
            }
            // Prose that merely says "baton" ("baton holds", "baton over") names no command.
            guard !path.isEmpty else {
                if let word = words.first, word.allSatisfy({ $0.isLowercase || $0 == "-" }),
                    words.count > 1, words[1].hasPrefix("--")
                {
                    Issue.record("\(file): `baton \(word)` is not a command")
                }
                continue
            }
            // The options it may take: its own, or (a group named with an option) any below it.
            var known = all[path]?.options ?? []
            for (other, help) in all where other.starts(with: path) { known.formUnion(help.options) }
            for word in words where word.hasPrefix("--") {
                let option = String(word.prefix { $0 != "=" && $0 != "," && $0 != "]" && $0 != "." })
                guard option.count > 2, option.dropFirst(2).allSatisfy({ $0.isLetter || $0 == "-" }) else {
                    continue
                }
                #expect(
                    known.contains(option),
                    "\(file): `baton \(path.joined(separator: " ")) \(option)`: no such option in --help")
            }
        }
    }
}
