import BatonJSON
import Foundation
import Testing

extension HeavyEndToEnd {
    @Suite("The token stays secret", .serialized)
    struct SecretTests {
        @Test("a participant's logs, status files, sync states and stderr never contain the token")
        func tokenNeverWritten() async throws {
            let f = try await CoordinatorFixture(records: 500)
            let host = try await f.start("host", role: "host", lifecycle: "foreground", batchSize: 100)
            #expect(try await f.wait(["--writer", "host"]))
            #expect(try await f.wait(["--sync", "accounts=done"]))
            // A participant with a wrong token fails its syncs: the error must not echo the token.
            let stranger = try await BatonProcess(
                [
                    "participant", "--dir", f.dir, "--name", "stranger", "--role", "extension", "--server",
                    f.server.url,
                    "--lifecycle", "background", "--token", "wrong-secret-token-123",
                    "--sync-down", "other:other:SELECT Id FROM Account",
                ])
            #expect(try await f.wait(["--lifecycle", "stranger=background"]))
            try await f.signal("host", "background")
            try await f.signal("stranger", "foreground")
            #expect(try await f.wait(["--sync", "other=failed"], timeout: 120))
            await stranger.send(SIGTERM)
            _ = try await stranger.wait()
            try await f.finish()

            var texts = [host.stderr, host.stdout, stranger.stderr, stranger.stdout]
            for sub in ["logs", "participants", "lifecycle"] {
                for file in (try? FileManager.default.contentsOfDirectory(atPath: f.dir + "/" + sub)) ?? [] {
                    texts.append(
                        (try? String(contentsOfFile: f.dir + "/\(sub)/\(file)", encoding: .utf8)) ?? "")
                }
            }
            texts.append(try await BatonProcess.run(["syncs", "--dir", f.dir, "--json"]).stdout)
            texts.append(try await BatonProcess.run(["status", "--dir", f.dir, "--json"]).stdout)
            let failed = try await BatonProcess.run(["syncs", "--dir", f.dir, "--status", "failed", "--json"])
                .stdout
            #expect(failed.contains("INVALID_SESSION_ID"))
            for text in texts {
                #expect(!text.contains("e2e-token"))
                #expect(!text.contains("wrong-secret-token-123"))
            }
        }
    }
}
