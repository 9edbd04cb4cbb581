import BatonJSON
import BatonREST
import Foundation
import Testing

/// `Examples/NotesPair`, driven as processes: a host app and a share extension over one shared
/// directory.
@Suite("The NotesPair example", .serialized, .timeLimit(.minutes(20)))
struct NotesPairTests {
    /// The folder of the example's executables: this package builds them (NotesHost and
    /// NotesShare are targets of the root package too), beside `baton`.
    static func products() throws -> String {
        let baton = URL(fileURLWithPath: BatonBinary.path).deletingLastPathComponent().path
        for name in ["NotesHost", "NotesShare"] {
            try #require(
                FileManager.default.isExecutableFile(atPath: baton + "/" + name),
                "\(name) is not built beside \(BatonBinary.path) (swift build --build-tests builds it)")
        }
        return baton
    }

    @Test(
        "host and share extension: edits by the writer sync up, the other's write is refused naming it, each sees the other's commits, nothing is lost"
    )
    func pair() async throws {
        let products = try Self.products()
        let (serve, url, token) = try await Self.serve()
        let temp = FileManager.default.temporaryDirectory.path + "/notes-pair-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temp) }
        let common = ["--dir", temp + "/d", "--server", url, "--token", token]

        let host = try await BatonProcess(
            common + ["--lifecycle", "foreground"], executable: products + "/NotesHost", interactive: true)
        try await host.waitForOutput("the host's first sync") { out, _ in out.contains("count 20 local 0") }
        let share = try await BatonProcess(common, executable: products + "/NotesShare", interactive: true)
        try await share.waitForOutput("the share's live count") { out, _ in out.contains("count 20 local 0") }

        // 1. The host, as writer, adds and edits a note; it syncs up. 4. The extension sees it.
        host.type("add from the host")
        try await host.waitForOutput("the host's note") { out, _ in out.contains("added ") }
        let added = try #require(
            host.stdout.split(separator: "\n").first { $0.hasPrefix("added ") }?.split(separator: " ").last)
        host.type("edit \(added) from the host, edited")
        try await host.waitForOutput("the host's edit") { out, _ in out.contains("edited \(added)") }
        try await host.waitForOutput("the host's edit synced up") { out, _ in
            out.hasSuffix("count 21 local 0\n")
        }
        try await share.waitForOutput("the extension to see the host's note") { out, _ in
            out.contains("count 21")
        }

        // 2. The extension's write while the host is in the foreground fails, naming the host.
        share.type("add too early")
        try await share.waitForOutput("the refusal") { out, _ in out.contains("error: ") }
        #expect(share.stdout.contains("does not hold the writer lease"), "\(share.stdout)")
        #expect(share.stdout.contains("the writer is 'host'"), "\(share.stdout)")

        // 3. The host goes to the background; the extension's edit succeeds and syncs up; the
        // host (a reader now) sees it live.
        share.type("foreground")
        host.type("background")
        try await share.waitForOutput("the extension to become the writer") { out, _ in
            out.contains("writer\n")
        }
        share.type("add from the share sheet")
        try await share.waitForOutput("the extension's note") { out, _ in out.contains("added ") }
        try await host.waitForOutput("the host to see the extension's note") { out, _ in
            out.contains("count 22 local 1")
        }
        try await host.waitForOutput("the extension's note synced up") { out, _ in
            out.hasSuffix("count 22 local 0\n")
        }

        // Junk is refused with a reason, and the app keeps running.
        share.type("frobnicate")
        try await share.waitForOutput("the junk refused") { out, _ in
            out.contains("unknown command 'frobnicate'")
        }

        // 5. Nothing lost: the server has every note, once.
        let names = try await Self.serverNames(url: url, token: token)
        #expect(names.count == 22)
        #expect(names.filter { $0 == "from the host, edited" }.count == 1)
        #expect(names.filter { $0 == "from the share sheet" }.count == 1)
        #expect(!names.contains("too early"))

        for app in [host, share] { app.closeInput() }
        let hostResult = try await host.wait(timeout: .seconds(60))
        #expect(hostResult.status == 0, "\(hostResult.stdout) \(hostResult.stderr)")
        let shareResult = try await share.wait(timeout: .seconds(60))
        #expect(shareResult.status == 0, "\(shareResult.stdout) \(shareResult.stderr)")
        try await Self.expectSingleWriter(temp + "/d")
        await serve.send(SIGTERM)
        _ = try await serve.wait(timeout: .seconds(30))
    }

    @Test(
        "share extension first, then the host: neither commits anything at start-up; the host becomes the writer and syncs"
    )
    func shareFirst() async throws {
        let products = try Self.products()
        let (serve, url, token) = try await Self.serve()
        let temp = FileManager.default.temporaryDirectory.path + "/notes-pair-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temp) }
        let common = ["--dir", temp + "/d", "--server", url, "--token", token]

        // The extension starts in the background on a new directory: it only reads.
        let share = try await BatonProcess(common, executable: products + "/NotesShare", interactive: true)
        try await share.waitForOutput("the share to start") { out, _ in out.contains("ready share") }
        let idle = try await BatonProcess.run(["lease", "check", "--strict", "--dir", temp + "/d"])
        #expect(idle.status == 0, "\(idle.stdout) \(idle.stderr)")
        #expect(idle.stdout.contains("0 commits"), "\(idle.stdout)")

        // The host comes up in the foreground while the extension runs: it registers the soup and
        // syncs under the lease, and the extension sees it all.
        let host = try await BatonProcess(
            common + ["--lifecycle", "foreground"], executable: products + "/NotesHost", interactive: true)
        try await host.waitForOutput("the host's first sync") { out, _ in out.contains("count 20 local 0") }
        try await share.waitForOutput("the share's live count") { out, _ in out.contains("count 20 local 0") }
        host.type("add from the host")
        try await host.waitForOutput("the host's note synced up") { out, _ in
            out.hasSuffix("count 21 local 0\n")
        }

        for app in [share, host] { app.closeInput() }
        let shareResult = try await share.wait(timeout: .seconds(60))
        #expect(shareResult.status == 0, "\(shareResult.stdout) \(shareResult.stderr)")
        let hostResult = try await host.wait(timeout: .seconds(60))
        #expect(hostResult.status == 0, "\(hostResult.stdout) \(hostResult.stderr)")
        try await Self.expectSingleWriter(temp + "/d")
        await serve.send(SIGTERM)
        _ = try await serve.wait(timeout: .seconds(30))
    }

    /// `baton serve` with 20 Accounts: the process, its URL and its token.
    static func serve() async throws -> (BatonProcess, url: String, token: String) {
        let serve = try await BatonProcess(["serve", "--json", "--seed", "Account=20"])
        try await serve.waitForOutput("the server's address") { out, _ in out.contains("\n") }
        let first = try JSONValue(parsing: String(serve.stdout.split(separator: "\n")[0]))
        let url = try #require(first.value(atPath: "url")?.stringValue)
        let token = try #require(first.value(atPath: "token")?.stringValue)
        return (serve, url, token)
    }

    /// `baton lease check --strict` passes on `dir`: no overlapping holdings, and every commit by
    /// the holder of its epoch, none outside the lease.
    static func expectSingleWriter(_ dir: String) async throws {
        let check = try await BatonProcess.run(["lease", "check", "--strict", "--dir", dir])
        #expect(check.status == 0, "lease check --strict: \(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("lease check passed"), "\(check.stdout)")
    }

    static func serverNames(url: String, token: String) async throws -> [String] {
        let client = RESTClient(baseURL: url, token: token)
        let page = try await client.queryFirstPage("SELECT Id, Name FROM Account")
        return page.records.compactMap { $0["Name"]?.stringValue }
    }
}
