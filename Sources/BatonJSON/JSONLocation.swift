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
/// keeps no positions, so these scan the text again (``JSONOutline`` scans it once for many).
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
    /// when there is no such value. Of repeated keys, the last counts, as in parsing. Outlines
    /// the whole text: for many look-ups, keep a ``JSONOutline``.
    public static func offset(of path: [JSONPathComponent], in bytes: [UInt8]) -> Int? {
        JSONOutline(bytes).offset(of: path)
    }
}
