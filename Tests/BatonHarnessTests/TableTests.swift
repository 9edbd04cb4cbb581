import BatonCoordinator
import BatonStore
import Testing

@testable import BatonHarness
@testable import BatonSync

@Suite("Tables cut long cells at a word boundary")
struct TableTests {
    static let injected =
        "the server answered HTTP 500 Internal Server Error for the query page (injected fault, 3 of 5)"

    /// Every word of `shown` (its closing "…" aside) is a whole word of `full`, in order.
    static func wholeWords(_ shown: String, of full: String) -> Bool {
        let words = shown.replacing("…", with: "").split(separator: " ").map(String.init)
        let original = full.split(separator: " ").map(String.init)
        guard words.count <= original.count else { return false }
        return zip(words, original).allSatisfy { shown, word in
            shown == word || (shown == words.last && Table.trimmed(word) == shown)
        }
    }

    @Test(
        "a cell is cut after its last whole word that fits, with …; a short one is left as it is",
        arguments: [
            ("HTTP 500 from the server (injected fault)", 30, "HTTP 500 from the server…"),
            ("HTTP 500 from the server (injected fault)", 41, "HTTP 500 from the server (injected fault)"),
            ("HTTP 500 from the server (injected fault)", 40, "HTTP 500 from the server (injected…"),
            ("connection refused; retrying soon", 25, "connection refused…"),
            ("short", 60, "short"),
            ("line one\nline two", 60, "line one line two"),
            (
                "https://example.com/a/very/long/path/without/spaces and more", 10,
                "https://example.com/a/very/long/path/without/spaces…"
            ),
            (
                "https://example.com/a/very/long/path/without/spaces", 10,
                "https://example.com/a/very/long/path/without/spaces"
            ),
            ("two  spaces   between words here", 20, "two spaces between…"),
        ])
    func fit(text: String, width: Int, expected: String) {
        #expect(Table.fit(text, width: width) == expected)
    }

    @Test("never longer than its width (a first word too long aside), never mid-word", arguments: 1...95)
    func fitAtEveryWidth(width: Int) {
        let shown = Table.fit(Self.injected, width: width)
        let firstWord = Self.injected.split(separator: " ").first!.count
        #expect(shown.count <= max(width, firstWord + 1), "\(width): \(shown)")
        #expect(Self.wholeWords(shown, of: Self.injected), "\(width): \(shown)")
        #expect(shown.hasSuffix("…") == (shown != Self.injected), "\(width): \(shown)")
    }

    @Test("every column is limited: a long cell in any table is cut at a word, the others line up")
    func renderLimitsEveryColumn() {
        let long = String(repeating: "word ", count: 30) + "end"
        let lines = Table.render(
            header: ["A", "B", "C"], rows: [[long, "x", long], ["short", "y", "z"]])
        #expect(lines.count == 3)
        let first = lines[1].components(separatedBy: "  ")
        #expect(first[0].count <= Table.defaultMaxWidth && first[0].hasSuffix("…"))
        #expect(lines[1].hasSuffix("…"))
        // The second column starts at the same place on every line.
        let column = lines.map {
            $0.firstRange(of: "  x")?.lowerBound ?? $0.firstRange(of: "  y")?.lowerBound
        }
        #expect(
            lines[1].distance(from: lines[1].startIndex, to: column[1]!)
                == lines[2].distance(from: lines[2].startIndex, to: column[2]!))
    }

    @Test("baton syncs: the ERROR column ends at a whole word; the retry after it is shown whole")
    func syncsErrorColumn() throws {
        let state = try SyncState(
            row: SyncStateRow(
                id: 4, name: "accounts", type: "syncDown",
                target: ["type": "soql", "query": "SELECT Id FROM Account"], options: [:],
                soupName: "accounts",
                status: "failed", error: Self.injected))
        let retry = SyncRetry(name: "accounts", attempt: 4, lastError: Self.injected, nextAttempt: 0)
        let cell = SyncsReport.errorColumn(state.error, retry: retry)
        let error = try #require(cell.components(separatedBy: "; retry ").first)
        #expect(error.count <= SyncsReport.errorWidth)
        #expect(error.hasSuffix("…"))
        #expect(Self.wholeWords(error, of: Self.injected), "\(error)")
        #expect(cell.contains("; retry 5 at "), "\(cell)")
        let table = SyncsReport(syncs: [.readable(state)], retries: ["accounts": retry]).lines
        #expect(table[1].hasSuffix(String(cell.suffix(20))), "\(table[1])")
    }
}
