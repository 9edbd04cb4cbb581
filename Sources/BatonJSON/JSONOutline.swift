/// Where every value of a JSON text starts, its lines, and its repeated keys, found in one pass
/// over the text, so that naming the line of any value costs a walk down its path and a binary
/// search, not a scan of the text: a syncs config names a line for each of thousands of entries.
///
/// Build it from a text that ``JSONValue/init(parsing:maxDepth:)`` accepted; on other text the
/// offsets are unspecified.
///
/// ```swift
/// let outline = JSONOutline(bytes)
/// outline.offset(of: [.key("syncs"), .index(1)]).map { outline.lineAndColumn(ofOffset: $0).line }
/// ```
public struct JSONOutline: Sendable {
    /// One value: where it starts, and its members or elements (node numbers).
    struct Node: Sendable {
        var offset: Int
        var members: [String: Int] = [:]
        var elements: [Int] = []
    }

    /// A key an object gives more than once (JSON parsers keep the last one silently).
    public struct RepeatedKey: Sendable, Equatable {
        /// The key's path: the object's, then the key.
        public var path: [JSONPathComponent]
        /// Where its second occurrence starts.
        public var offset: Int
    }

    var nodes: [Node] = []
    /// The offset of each line's first byte; the first line starts at 0.
    let lineStarts: [Int]
    /// The first repeated key, in the text's order; nil when no object repeats a key.
    public private(set) var repeatedKey: RepeatedKey?
    /// The bytes the outline read to build itself: each byte of the text once for the values,
    /// once for the lines.
    public private(set) var bytesScanned = 0

    /// Outlines `bytes`, a valid JSON text.
    public init(_ bytes: [UInt8]) {
        var starts = [0]
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") { starts.append(index + 1) }
        lineStarts = starts
        var scanner = Scanner(bytes: bytes)
        scanner.skipSpace()
        var path: [JSONPathComponent] = []
        if scanner.index < bytes.count { _ = scanner.value(into: &self, path: &path) }
        bytesScanned = bytes.count + scanner.index
    }

    /// The byte offset where the value at `path` starts; nil when there is none. Of repeated
    /// keys, the last counts, as in parsing.
    public func offset(of path: [JSONPathComponent]) -> Int? {
        guard !nodes.isEmpty else { return nil }
        var node = 0
        for step in path {
            switch step {
            case .key(let key):
                guard let member = nodes[node].members[key] else { return nil }
                node = member
            case .index(let index):
                guard nodes[node].elements.indices.contains(index) else { return nil }
                node = nodes[node].elements[index]
            }
        }
        return nodes[node].offset
    }

    /// The 1-based line and column (in bytes) of byte `offset`.
    public func lineAndColumn(ofOffset offset: Int) -> (line: Int, column: Int) {
        var low = 0
        var high = lineStarts.count - 1
        // The last line that starts at or before `offset`.
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return (low + 1, offset - lineStarts[low] + 1)
    }

    /// The line of the value at `path`, or of its nearest enclosing value when there is none.
    public func line(of path: [JSONPathComponent]) -> Int {
        var located = path[...]
        while true {
            if let offset = offset(of: Array(located)) { return lineAndColumn(ofOffset: offset).line }
            guard !located.isEmpty else { return 1 }
            located = located.dropLast()
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// Reads the value at `index` into `outline`; returns its node number.
        mutating func value(into outline: inout JSONOutline, path: inout [JSONPathComponent]) -> Int {
            let node = outline.nodes.count
            outline.nodes.append(Node(offset: index))
            guard index < bytes.count else { return node }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "}") {
                    let keyOffset = index
                    let key = readString()
                    skipSpace()
                    index += 1  // ':'
                    skipSpace()
                    path.append(.key(key))
                    if outline.nodes[node].members[key] != nil, outline.repeatedKey == nil {
                        outline.repeatedKey = RepeatedKey(path: path, offset: keyOffset)
                    }
                    let member = value(into: &outline, path: &path)
                    path.removeLast()
                    outline.nodes[node].members[key] = member
                    skipSeparator()
                }
                index += 1
            case UInt8(ascii: "["):
                index += 1
                skipSpace()
                while index < bytes.count, bytes[index] != UInt8(ascii: "]") {
                    path.append(.index(outline.nodes[node].elements.count))
                    let element = value(into: &outline, path: &path)
                    path.removeLast()
                    outline.nodes[node].elements.append(element)
                    skipSeparator()
                }
                index += 1
            case UInt8(ascii: "\""):
                _ = readString()
            default:
                while index < bytes.count,
                    ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D]
                        .contains(bytes[index])
                {
                    index += 1
                }
            }
            return node
        }

        mutating func skipSeparator() {
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
            skipSpace()
        }

        /// Reads a string at `index`: its value, escapes decoded.
        mutating func readString() -> String {
            let start = index
            index += 1
            var escaped = false
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                escaped = escaped || bytes[index] == UInt8(ascii: "\\")
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            index += 1
            let raw = bytes[min(start + 1, bytes.count)..<min(index - 1, bytes.count)]
            guard escaped else { return String(decoding: raw, as: UTF8.self) }
            // The text was parsed already, so the string is valid; nil cannot happen.
            return (try? JSONValue(parsing: bytes[start..<min(index, bytes.count)]))?.stringValue
                ?? String(decoding: raw, as: UTF8.self)
        }
    }
}
