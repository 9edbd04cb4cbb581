/// One step of a path into a JSON document: a member's key or an element's index.
public enum JSONPathComponent: Sendable, Hashable, CustomStringConvertible {
    case key(String)
    case index(Int)

    public var description: String {
        switch self {
        case .key(let key): ".\(key)"
        case .index(let index): "[\(index)]"
        }
    }
}

/// Where things are in a JSON text, for messages that name a line: the parsed ``JSONValue``
/// keeps no positions, so these scan the text again.
public enum JSONLocation {
    /// The 1-based line and column of byte `offset` of `bytes`.
    public static func lineAndColumn(ofOffset offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        return (line, offset - lineStart + 1)
    }

    /// The byte offset where the value at `path` starts in `bytes`, a valid JSON text; `nil`
    /// when there is no such value. Of repeated keys, the last counts, as in parsing.
    public static func offset(of path: [JSONPathComponent], in bytes: [UInt8]) -> Int? {
        var scanner = Scanner(bytes: bytes)
        scanner.skipSpace()
        return scanner.find(path[...])
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// At the start of a value: the offset of `path` within it.
        mutating func find(_ path: ArraySlice<JSONPathComponent>) -> Int? {
            guard let step = path.first else { return index }
            guard index < bytes.count else { return nil }
            switch (bytes[index], step) {
            case (UInt8(ascii: "{"), .key(let wanted)):
                var found: Int?
                index += 1
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "}") {
                    let key = readString()
                    skipSpace()
                    index += 1  // ':'
                    skipSpace()
                    if key == wanted {
                        var inner = self
                        found = inner.find(path.dropFirst())
                    }
                    skipValue()
                    skipSpace()
                    if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
                    skipSpace()
                }
                return found
            case (UInt8(ascii: "["), .index(let wanted)):
                index += 1
                skipSpace()
                var position = 0
                while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                    if position == wanted { return find(path.dropFirst()) }
                    skipValue()
                    skipSpace()
                    if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
                    skipSpace()
                    position += 1
                }
                return nil
            default:
                return nil
            }
        }

        /// Reads a string at `index` (its raw text between the quotes, escapes as written).
        mutating func readString() -> String {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            let text = String(decoding: bytes[start..<min(index, bytes.count)], as: UTF8.self)
            index += 1
            return text
        }

        mutating func skipValue() {
            guard index < bytes.count else { return }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                _ = readString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case UInt8(ascii: "\""):
                        _ = readString()
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                    default: break
                    }
                    index += 1
                    if depth == 0 { return }
                }
            default:
                while index < bytes.count,
                    ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D]
                        .contains(
                            bytes[index])
                {
                    index += 1
                }
            }
        }
    }
}
