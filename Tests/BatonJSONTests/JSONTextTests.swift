import BatonJSON
import Testing

@Suite("JSON text: the byte writer and the object scanner")
struct JSONTextTests {
    @Test("control characters, quotes and backslashes are escaped; other UTF-8 is copied")
    func escapes() {
        let value = JSONValue.string("a\u{01}\u{1f}\"\\\n\r\té🚀")
        #expect(value.jsonText(sortedKeys: false) == #""a\u0001\u001f\"\\\n\r\té🚀""#)
    }

    @Test(
        "integers print as Swift prints them and read back equal",
        arguments: [
            0, 7, -1, 10, 123_456_789_012_345_678, -123_456_789_012_345_678, 999_999_999_999_999_999,
            Int64.max, Int64.min, Int64.min + 1,
        ] as [Int64])
    func integers(value: Int64) throws {
        let text = JSONValue.int(value).jsonText(sortedKeys: false)
        #expect(text == String(value))
        #expect(try JSONValue(parsing: text) == .int(value))
    }

    @Test("an integer past Int64 reads as a double; -0 reads as 0")
    func integerEdges() throws {
        #expect(try JSONValue(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue(parsing: "-0") == .int(0))
    }

    @Test("a parse can leave out one member name at one depth, and only there")
    func omitting() throws {
        let text =
            #"{"attributes":1,"records":[{"attributes":{"type":"A"},"Id":"x","Sub":{"attributes":2}},{"Id":"y","attrib\u0075tes":3}]}"#
        let value = try JSONValue(parsing: Array(text.utf8), omitting: "attributes", atDepth: 3)
        #expect(
            value
                == [
                    "attributes": 1,
                    "records": [["Id": "x", "Sub": ["attributes": 2]], ["Id": "y"]],
                ])
        #expect(
            try JSONValue(parsing: text).value(atPath: "records")?.arrayValue?.first?.objectValue?.count == 3)
    }

    @Test("a name given twice keeps its last value, in nested objects too")
    func duplicateNames() throws {
        #expect(
            try JSONValue(parsing: #"{"a":1,"b":{"a":{"a":5,"a":6}},"a":2}"#) == [
                "a": 2, "b": ["a": ["a": 6]],
            ])
    }

    @Test("strings of every length with quotes, backslashes, controls and UTF-8 anywhere read back equal")
    func stringScan() throws {
        // The string scan reads eight bytes at a time: specials before, on and after each word
        // boundary, and multi-byte characters across them.
        let alphabet: [String] = [
            "a", "\"", "\\", "\u{01}", "\u{1f}", "\n", "é", "🚀", " ", "~", "\u{7f}", "Z",
        ]
        var random = SplitMix64(seed: 16)
        var members: [JSONMember] = []
        for length in 0..<40 {
            for _ in 0..<25 {
                let text = (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
                    .joined()
                let value = JSONValue.object([text: .string(text), "k": .string(text)])
                let printed = value.jsonText(sortedKeys: true)
                #expect(try JSONValue(parsing: printed) == value, "\(Array(text.unicodeScalars))")
                try Array(printed.utf8).withUnsafeBufferPointer { buffer in
                    try JSONObjectScanner.members(of: buffer, into: &members)
                    #expect(
                        try members.map { try JSONObjectScanner.key($0, in: buffer) }.sorted()
                            == [text, "k"].sorted())
                }
            }
        }
        // A raw control character inside a string is refused wherever it falls.
        for position in 0..<17 {
            let text =
                "\"" + String(repeating: "x", count: position) + "\u{01}" + String(repeating: "y", count: 9)
                + "\""
            #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
        }
    }

    @Test("pieces escaped apart join into the whole string escaped")
    func pieces() throws {
        var writer = JSONTextWriter()
        writer.raw("\"")
        writer.stringContents("a\"b/")
        writer.stringContents("c\nd")
        writer.raw("\"")
        #expect(try JSONValue(parsing: writer.text) == .string("a\"b/c\nd"))
    }

    @Test("the scanner finds each member's key and its value exactly as written")
    func scanner() throws {
        let text = #" { "a" : 1.50 ,"b":"x\"y","c":{"d":[1,{"e":"}"}]},"f\u0041":null,"g":true,"h":[] } "#
        let bytes = Array(text.utf8)
        var members: [JSONMember] = []
        try bytes.withUnsafeBufferPointer { buffer in
            try JSONObjectScanner.members(of: buffer, into: &members)
            let keys = try members.map { try JSONObjectScanner.key($0, in: buffer) }
            let values = members.map { String(decoding: buffer[$0.value], as: UTF8.self) }
            #expect(keys == ["a", "b", "c", "fA", "g", "h"])
            #expect(values == ["1.50", #""x\"y""#, #"{"d":[1,{"e":"}"}]}"#, "null", "true", "[]"])
            #expect(members.map(\.keyEscaped) == [false, false, false, true, false, false])
        }
        // Reused: the next object replaces the members.
        try Array("{}".utf8).withUnsafeBufferPointer { try JSONObjectScanner.members(of: $0, into: &members) }
        #expect(members.isEmpty)
    }

    @Test(
        "the scanner refuses what is not one JSON object",
        arguments: [
            "", "[1]", "\"a\"", "{", "{\"a\":1", "{\"a\" 1}", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":tru}",
            "{\"a\":\"unterminated}", "{\"a\":01}", "{a:1}", "{\"a\":[1,}",
        ])
    func scannerRefuses(text: String) {
        var members: [JSONMember] = []
        #expect(throws: JSONParseError.self) {
            try Array(text.utf8).withUnsafeBufferPointer {
                try JSONObjectScanner.members(of: $0, into: &members)
            }
        }
    }
}
