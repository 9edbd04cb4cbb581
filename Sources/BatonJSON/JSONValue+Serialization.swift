/// A JSON text that could not be parsed; says where and why, never echoes the content.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem.
    public var offset: Int
    /// What was expected or found.
    public var reason: String

    public var description: String { "malformed JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Parses a complete JSON text (surrounding whitespace allowed).
    ///
    /// - Throws: ``JSONParseError`` for anything that is not exactly one JSON value, or nesting
    ///   deeper than `maxDepth`.
    public init(parsing text: String, maxDepth: Int = 256) throws {
        var copy = text
        self = try copy.withUTF8 { buffer in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    /// Parses a complete JSON text from UTF-8 bytes.
    public init(parsing bytes: some Collection<UInt8>, maxDepth: Int = 256) throws {
        self = try Self.parse(bytes) { buffer in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    /// Runs `body` over `bytes` in place when they are contiguous (a response buffer), else over
    /// a copy.
    private static func parse(
        _ bytes: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws -> JSONValue
    ) throws -> JSONValue {
        if let value = try bytes.withContiguousStorageIfAvailable(body) { return value }
        return try Array(bytes).withUnsafeBufferPointer(body)
    }

    /// Parses a complete JSON text from UTF-8 bytes, leaving out every member named `key` of the
    /// objects at `depth` (1 is the outermost value): a query page's records without their
    /// `attributes` (depth 3), with no copy of each record made to take them out afterwards.
    public init(
        parsing bytes: some Collection<UInt8>, maxDepth: Int = 256, omitting key: String, atDepth depth: Int
    )
        throws
    {
        self = try Self.parse(bytes) { buffer in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            parser.omitted = (Array(key.utf8), depth)
            return try parser.parseDocument()
        }
    }

    /// The compact JSON text, with object keys sorted so equal values print equally.
    public var jsonString: String { jsonText(sortedKeys: true) }

    /// The compact JSON text; with `sortedKeys: false` each object's keys come in the
    /// dictionary's own order (cheaper: for text that is parsed again, never compared as text).
    public func jsonText(sortedKeys: Bool) -> String {
        var writer = JSONTextWriter()
        writer.value(self, sortedKeys: sortedKeys)
        return writer.text
    }

    /// Whether a string's UTF-8 holds a byte JSON must escape (a control, `"` or `\`).
    @inline(__always)
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var flags: UInt8 = 0
        for byte in bytes {
            flags |= (byte < 0x20 ? 1 : 0) | (byte == 0x22 ? 1 : 0) | (byte == 0x5C ? 1 : 0)
        }
        return flags != 0
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The compact JSON text of this object, keys sorted.
    public var jsonString: String { JSONValue.object(self).jsonString }

    /// Parses a JSON text that must be an object.
    public init(parsingObject text: String) throws {
        guard case .object(let object) = try JSONValue(parsing: text) else {
            throw JSONParseError(offset: 0, reason: "expected a JSON object")
        }
        self = object
    }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0
    var depth = 0
    /// A member name left out of the objects at one depth.
    var omitted: (key: [UInt8], depth: Int)?
    /// The members of the objects being parsed, innermost last: each object is built at its
    /// final size once its members are known (no rehash as it grows).
    var members: [(key: String, value: JSONValue)] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected content after the value") }
        return value
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case 0xEF where bytes[index...].starts(with: Self.byteOrderMark):
            throw fail(
                index == 0
                    ? "the text starts with a UTF-8 byte-order mark (EF BB BF); save it without one"
                    : "a UTF-8 byte-order mark (EF BB BF) where a value should be")
        default: throw fail("unexpected character")
        }
    }

    /// U+FEFF in UTF-8, which editors on Windows put at the start of a file.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    mutating func enter() throws {
        depth += 1
        if depth > maxDepth { throw fail("nesting deeper than \(maxDepth)") }
    }

    mutating func parseObject() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        let omitting = omitted.flatMap { $0.depth == depth ? $0.key : nil }
        let start = members.count
        defer { members.removeSubrange(start...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a string key")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            if let omitting, key.utf8.elementsEqual(omitting) {
                try skipValue()
            } else {
                members.append((key, try parseValue()))
            }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                var object = JSONObject(minimumCapacity: members.count - start)
                // A name given twice keeps its last value, as before.
                for (key, value) in members[start...] { object[key] = value }
                return .object(object)
            } else {
                throw fail("expected ',' or '}'")
            }
        }
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var values: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            } else {
                throw fail("expected ',' or ']'")
            }
        }
    }

    mutating func parseString() throws -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            index = firstSpecial(from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                // ASCII is valid UTF-8 as it is: no validation (whose generic entry point looks
                // its metadata up on every call) for the keys and most values.
                if Self.isASCII(slice) { return String(decoding: slice, as: UTF8.self) }
                guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return s
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in string") }
            index += 1
        }
        var scratch = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let s = String(validating: scratch, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scratch.append(0x22)
                case UInt8(ascii: "\\"): scratch.append(0x5C)
                case UInt8(ascii: "/"): scratch.append(0x2F)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"):
                    scratch.append(contentsOf: Array(String(Character(try unicodeEscape())).utf8))
                default: throw fail("invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("control character in string") }
                scratch.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// The index of the first byte at or after `start` that ends a string's plain run (a quote,
    /// a backslash or a control character), or the end. Eight bytes at a time: a byte is found
    /// by the classic zero-byte test on the word XORed with the byte repeated, and controls by
    /// the "less than" variant; a borrow only ever marks bytes after the first hit.
    @inline(__always)
    func firstSpecial(from start: Int) -> Int {
        var position = start
        guard let base = bytes.baseAddress else { return bytes.count }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while position + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self).littleEndian
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let hits =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                | ((word &- ones &* 0x20) & ~word)
            let marked = hits & highs
            if marked != 0 { return position + marked.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return position }
            position += 1
        }
        return position
    }

    /// Whether every byte is below 0x80 (branch-free, so it vectorizes).
    @inline(__always)
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var bits: UInt8 = 0
        for byte in bytes { bits |= byte }
        return bits < 0x80
    }

    mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = index
        let isInteger = try skipNumber()
        let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if isInteger, digits.count <= 18 {
            // Up to 18 digits always fit an Int64: summed here, with no text in between.
            var value: Int64 = 0
            var negative = false
            for byte in digits {
                if byte == UInt8(ascii: "-") {
                    negative = true
                } else {
                    value = value &* 10 &+ Int64(byte &- UInt8(ascii: "0"))
                }
            }
            return .int(negative ? -value : value)
        }
        let text = String(decoding: digits, as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text) else { throw fail("invalid number") }
        // JSON has no infinity: a number too large for a double is refused (it would print as
        // null, and read back as another value), at its first byte.
        guard value.isFinite else { throw JSONParseError(offset: start, reason: "number out of range") }
        return .double(value)
    }

    /// Moves past a number; returns whether it is an integer (no fraction, no exponent).
    mutating func skipNumber() throws -> Bool {
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("invalid number")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digitsStart = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                index += 1
            }
            guard index > digitsStart else { throw fail("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            let digitsStart = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                index += 1
            }
            guard index > digitsStart else { throw fail("invalid number") }
        }
        return isInteger
    }

    /// Moves past a string (at its opening quote) without decoding it; returns whether it holds
    /// an escape.
    /// Moves past a string, checking it as ``parseString()`` does (its escapes and its UTF-8)
    /// without building it; returns whether it has escapes.
    mutating func skipString() throws -> Bool {
        index += 1
        var escaped = false
        var runStart = index
        while index < bytes.count {
            index = firstSpecial(from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte < 0x20 { throw fail("control character in string") }
            // A plain run ends here: valid UTF-8 on its own (escapes only ever add whole
            // characters, so checking runs apart is checking the string).
            let run = UnsafeBufferPointer(rebasing: bytes[runStart..<index])
            if !Self.isASCII(run), String(validating: run, as: UTF8.self) == nil {
                throw JSONParseError(offset: runStart, reason: "invalid UTF-8")
            }
            index += 1
            if byte == UInt8(ascii: "\"") { return escaped }
            escaped = true
            try skipEscape()
            runStart = index
        }
        throw fail("unterminated string")
    }

    /// Moves past the escape after a backslash, checking it as ``parseString()`` does.
    mutating func skipEscape() throws {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            _ = try unicodeEscape()
        default:
            throw fail("invalid escape")
        }
    }

    /// The scalar of a `\u` escape whose four hex digits start at `index`, with the low half
    /// of a surrogate pair when it is the high half.
    mutating func unicodeEscape() throws -> Unicode.Scalar {
        var scalar = try parseHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail("unpaired surrogate") }
            index += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid surrogate pair") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("unpaired surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
        return unicode
    }

    /// Moves past any value, checked as a parse checks it: strings and literals without being
    /// built, numbers converted (a number too large for a double is refused either way).
    mutating func skipValue() throws {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "\""): _ = try skipString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try parseNumber()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try parseValue()
        }
    }
}

/// One member of a JSON object, as byte ranges of the text it was found in.
public struct JSONMember: Sendable {
    /// The key's bytes, between its quotes (still escaped when `keyEscaped`).
    public var key: Range<Int>
    public var keyEscaped: Bool
    /// The value's text, exactly as written.
    public var value: Range<Int>
}

/// Finds an object's members without building values: for copying some of them, as they are, into
/// other JSON text.
public enum JSONObjectScanner {
    /// Replaces `members` with those of the object `bytes` holds, in order.
    ///
    /// - Throws: ``JSONParseError`` when `bytes` is not one JSON object.
    public static func members(of bytes: UnsafeBufferPointer<UInt8>, into members: inout [JSONMember]) throws
    {
        members.removeAll(keepingCapacity: true)
        var parser = JSONParser(bytes: bytes, maxDepth: 256)
        parser.skipWhitespace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else {
            throw parser.fail("expected a JSON object")
        }
        parser.index += 1
        parser.skipWhitespace()
        if parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
        } else {
            while true {
                parser.skipWhitespace()
                guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "\"") else {
                    throw parser.fail("expected a string key")
                }
                let keyStart = parser.index + 1
                let escaped = try parser.skipString()
                let key = keyStart..<(parser.index - 1)
                parser.skipWhitespace()
                guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: ":") else {
                    throw parser.fail("expected ':'")
                }
                parser.index += 1
                parser.skipWhitespace()
                let valueStart = parser.index
                try parser.skipValue()
                members.append(JSONMember(key: key, keyEscaped: escaped, value: valueStart..<parser.index))
                parser.skipWhitespace()
                guard parser.index < bytes.count else { throw parser.fail("unexpected end of input") }
                if bytes[parser.index] == UInt8(ascii: ",") {
                    parser.index += 1
                } else if bytes[parser.index] == UInt8(ascii: "}") {
                    parser.index += 1
                    break
                } else {
                    throw parser.fail("expected ',' or '}'")
                }
            }
        }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.fail("unexpected content after the value") }
    }

    /// A member's key as a string (escapes decoded).
    public static func key(_ member: JSONMember, in bytes: UnsafeBufferPointer<UInt8>) throws -> String {
        var parser = JSONParser(bytes: bytes, maxDepth: 1)
        parser.index = member.key.lowerBound - 1
        return try parser.parseString()
    }
}
