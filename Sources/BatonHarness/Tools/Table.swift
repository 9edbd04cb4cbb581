/// Left-aligned text columns, as the CLI's tables print them (`baton syncs`, `baton status`,
/// `baton lease history`).
///
/// A cell longer than its column's limit is cut at a word boundary and ends with `…`, never in
/// the middle of a word (a first word longer than the limit is shown whole); line breaks and
/// tabs in a cell become spaces, so one row is one line. The `--json` form of every table keeps
/// the full text.
public enum Table {
    /// The widest a column is shown unless the table gives it a limit of its own.
    public static let defaultMaxWidth = 60

    /// The table's lines: the header, then one line per row.
    ///
    /// - Parameters:
    ///   - header: the column titles (never cut).
    ///   - rows: the cells, as many per row as the header has.
    ///   - maxWidths: limits by column index for the columns that do not use
    ///     ``defaultMaxWidth`` (`.max`: a column whose cells are fitted already).
    public static func render(header: [String], rows: [[String]], maxWidths: [Int: Int] = [:]) -> [String] {
        let fitted = rows.map { row in
            row.enumerated().map { index, cell in fit(cell, width: maxWidths[index] ?? defaultMaxWidth) }
        }
        let all = [header] + fitted
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1
                    ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }

    /// `text` on one line and at most `width` characters: cut after the last whole word that
    /// fits with a closing `…` (trailing punctuation between words dropped). A first word longer
    /// than `width` is kept whole, with `…` when more follows: a word is never cut.
    ///
    /// ```swift
    /// Table.fit("HTTP 500 from the server (injected fault)", width: 30)  // "HTTP 500 from the server…"
    /// ```
    public static func fit(_ text: String, width: Int) -> String {
        let line = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
        guard line.count > width else { return line }
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        var kept = ""
        for (index, word) in words.enumerated() {
            let candidate = kept.isEmpty ? String(word) : kept + " " + word
            if index == words.count - 1, candidate.count <= width { return candidate }
            // Room for the closing "…" after what is kept.
            if trimmed(candidate).count + 1 > width {
                if kept.isEmpty { kept = candidate }
                break
            }
            kept = candidate
        }
        return kept.count == words.joined(separator: " ").count ? kept : trimmed(kept) + "…"
    }

    /// `text` without the spaces and separating punctuation it ends with.
    static func trimmed(_ text: String) -> String {
        var result = Substring(text)
        while let last = result.last, last == " " || ",;:".contains(last) { result = result.dropLast() }
        return String(result)
    }
}
