import BatonStore
import BatonTestSupport
import Foundation
import Testing

@Suite("CLI on bad input")
struct CLIErrorTests {
    @Test("store info on two soups prints names, counts and integrity ok")
    func storeInfoJSON() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        for soup in ["accounts", "contacts"] {
            let created = try await BatonProcess.run([
                "store", "soup", "create", "--dir", dir, soup, "--index", "Id",
            ])
            #expect(created.status == 0)
        }
        _ = try await BatonProcess.run(
            ["store", "upsert", "--dir", dir, "--soup", "accounts", "{\"Id\":\"a\"}", "{\"Id\":\"b\"}"])
        _ = try await BatonProcess.run([
            "store", "upsert", "--dir", dir, "--soup", "contacts", "{\"Id\":\"c\"}",
        ])
        let info = try await BatonProcess.run(["store", "info", "--dir", dir, "--json"])
        #expect(info.status == 0)
        let object = try JSONValue(parsing: info.stdout)
        #expect(object.value(atPath: "integrity") == "ok")
        let counts = Dictionary(
            uniqueKeysWithValues: (object.value(atPath: "soups")?.arrayValue ?? []).compactMap { soup in
                soup.value(atPath: "name")?.stringValue.map { ($0, soup.value(atPath: "count")) }
            })
        #expect(counts == ["accounts": 2, "contacts": 1])
    }

    @Test(
        "signal refuses a mistyped name and a missing directory unless --create; it never makes D by itself")
    func signalRefusesUnknownNames() async throws {
        let temp = try TemporaryDirectory()
        let missing = temp.path + "/nowhere"
        let noDir = try await BatonProcess.run(["signal", "--dir", missing, "host", "background"])
        #expect(noDir.status != 0)
        #expect(noDir.stderr.contains("--create"), "\(noDir.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing))

        let dir = temp.path + "/shared"
        #expect(try await BatonProcess.run(["store", "init", "--dir", dir]).status == 0)
        let typo = try await BatonProcess.run(["signal", "--dir", dir, "hots", "foreground"])
        #expect(typo.status != 0)
        #expect(typo.stderr.contains("no participant named 'hots'"), "\(typo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/lifecycle/hots"))

        let created = try await BatonProcess.run(["signal", "--dir", dir, "host", "foreground", "--create"])
        #expect(created.status == 0, "\(created.stderr)")
        // Now the name has a signal file: a plain signal works.
        let again = try await BatonProcess.run(["signal", "--dir", dir, "host", "background"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try String(contentsOfFile: dir + "/lifecycle/host", encoding: .utf8).hasPrefix("background"))
    }

    @Test("version and help")
    func versionAndHelp() async throws {
        let version = try await BatonProcess.run(["--version"])
        #expect(version.status == 0)
        #expect(!version.stdout.isEmpty)
        let help = try await BatonProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("store"))
    }

    static let badInputs: [(String, [String], String?, String)] = [
        ("unknown soup", ["store", "upsert", "--soup", "nope", "{}"], nil, "no soup named 'nope'"),
        ("malformed JSON", ["store", "upsert", "--soup", "accounts", "{bad"], nil, "malformed JSON"),
        (
            "malformed JSON on stdin", ["store", "upsert", "--soup", "accounts"], "{\"a\":1}\n[1,\n",
            "record 2"
        ),
        (
            "bad index type", ["store", "soup", "create", "x", "--index", "Id:uuid"], nil,
            "unknown index type"
        ),
        ("bad soup name", ["store", "soup", "create", "no/slash"], nil, "invalid soup name"),
    ]

    @Test("bad input gives one line on stderr and a non-zero exit", arguments: 0..<5)
    func badInput(index: Int) async throws {
        let (_, arguments, stdin, expected) = Self.badInputs[index]
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        _ = try await BatonProcess.run(["store", "soup", "create", "--dir", dir, "accounts"])
        var full = arguments
        full.insert(contentsOf: ["--dir", dir], at: arguments[1] == "soup" ? 3 : 2)
        let result = try await BatonProcess.run(full, stdin: stdin)
        #expect(result.status != 0)
        #expect(!result.signaled)
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "stderr: \(result.stderr)")
    }

    @Test(
        "baton wait: 0 when the condition holds, 2 on a timeout, 1 on a missing directory, which it never creates"
    )
    func waitExitCodes() async throws {
        let temp = try TemporaryDirectory()
        let dir = temp.path + "/shared"
        #expect(try await BatonProcess.run(["store", "init", "--dir", dir]).status == 0)
        let held = try await BatonProcess.run(["wait", "--dir", dir, "--no-writer", "--timeout", "5"])
        #expect(held.status == 0, "\(held.stderr)")
        let timedOut = try await BatonProcess.run([
            "wait", "--dir", dir, "--writer", "nobody", "--timeout", "0.2",
        ])
        #expect(timedOut.status == 2, "\(timedOut.stderr)")
        #expect(timedOut.stderr.hasPrefix("baton: error: timed out"), "\(timedOut.stderr)")

        let missing = temp.path + "/no/such/dir"
        let refused = try await BatonProcess.run([
            "wait", "--dir", missing, "--writer", "host", "--timeout", "2",
        ])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("no shared directory at \(missing)"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path + "/no"), "wait created the directory")

        // A directory with no store: readers create nothing in it either (no setup.lock).
        let empty = temp.path + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        _ = try await BatonProcess.run(["wait", "--dir", empty, "--writer", "host", "--timeout", "0.2"])
        _ = try await BatonProcess.run(["status", "--dir", empty])
        #expect(!FileManager.default.fileExists(atPath: empty + "/setup.lock"))
        #expect(!FileManager.default.fileExists(atPath: empty + "/store.sqlite"))
    }

    @Test(
        "every command but store init, participant and signal --create refuses a missing directory, creating nothing",
        arguments: [
            ["status"], ["syncs"], ["lease", "history"], ["lease", "check"], ["store", "info"],
            ["store", "query", "--soup", "accounts"], ["watch"], ["wait", "--release", "--timeout", "1"],
            ["signal", "host", "background"],
        ])
    func missingDirectory(_ command: [String]) async throws {
        let temp = try TemporaryDirectory()
        let missing = temp.path + "/no/such/dir"
        let result = try await BatonProcess.run(command + ["--dir", missing])
        #expect(result.status == 1, "\(command): \(result.stderr)")
        let error = result.stderr
        #expect(error.hasPrefix("baton: error: no shared directory at \(missing)"), "\(error)")
        #expect(error.split(separator: "\n").count == 1, "\(error)")
        #expect(!FileManager.default.fileExists(atPath: temp.path + "/no"), "\(command) created it")
    }

    @Test("a store file that is not SQLite and a world-writable directory are refused")
    func badStores() async throws {
        let temp = try TemporaryDirectory()
        let notSQLite = temp.path + "/junk"
        try FileManager.default.createDirectory(atPath: notSQLite, withIntermediateDirectories: true)
        chmod(notSQLite, 0o700)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: notSQLite + "/store.sqlite"))
        let junk = try await BatonProcess.run(["store", "info", "--dir", notSQLite])
        #expect(junk.status != 0 && !junk.signaled)
        #expect(junk.stderr.contains("not a SQLite database"), "stderr: \(junk.stderr)")

        let open = temp.path + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        let refused = try await BatonProcess.run(["store", "init", "--dir", open])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("world-writable"), "stderr: \(refused.stderr)")
    }
}
