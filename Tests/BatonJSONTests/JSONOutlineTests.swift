import BatonJSON
import Testing

/// Issue 53: one pass over a JSON text gives every value's line, and its repeated keys.
@Suite("JSON outlines")
struct JSONOutlineTests {
    static let text = """
        {"syncs": [
          {"a": 1,
           "b": {"c": [10,
                      20]}},
          {"a\\u0041": "x"}
        ]}
        """

    @Test("each value's offset is the one JSONLocation finds, and its line is right")
    func offsets() {
        let bytes = Array(Self.text.utf8)
        let outline = JSONOutline(bytes)
        let paths: [[JSONPathComponent]] = [
            [], [.key("syncs")], [.key("syncs"), .index(0)], [.key("syncs"), .index(0), .key("b")],
            [.key("syncs"), .index(0), .key("b"), .key("c"), .index(1)],
            [.key("syncs"), .index(1), .key("aA")],
        ]
        let lines = paths.map { path in
            outline.offset(of: path).map { outline.lineAndColumn(ofOffset: $0).line }
        }
        #expect(lines == [1, 1, 2, 3, 4, 5])
        for path in paths {
            let offset = outline.offset(of: path)
            #expect(
                offset.map {
                    outline.lineAndColumn(ofOffset: $0) == JSONLocation.lineAndColumn(ofOffset: $0, in: bytes)
                } == true)
        }
        #expect(outline.offset(of: [.key("syncs"), .index(2)]) == nil)
        #expect(outline.offset(of: [.key("nope")]) == nil)
        // A missing value's line is its nearest enclosing value's.
        #expect(outline.line(of: [.key("syncs"), .index(0), .key("b"), .key("missing")]) == 3)
        #expect(outline.repeatedKey == nil)
        // One pass for the values, one for the lines.
        #expect(outline.bytesScanned == 2 * bytes.count)
    }

    @Test("a key given twice is found, at its second place, at any depth")
    func repeatedKeys() {
        let outline = JSONOutline(Array("{\"x\": [{\"a\": 1,\n \"b\": 2,\n \"a\": 3}]}".utf8))
        #expect(outline.repeatedKey?.path == [.key("x"), .index(0), .key("a")])
        #expect(outline.repeatedKey.map { outline.lineAndColumn(ofOffset: $0.offset).line } == 3)
        // The last value counts, as in parsing.
        #expect(
            outline.offset(of: [.key("x"), .index(0), .key("a")]).map {
                outline.lineAndColumn(ofOffset: $0).line
            } == 3)
    }

    @Test("a byte-order mark is named where it stops a parse")
    func byteOrderMark() {
        #expect {
            try JSONValue(parsing: [0xEF, 0xBB, 0xBF] + Array("{}".utf8))
        } throws: { error in
            (error as? JSONParseError)?.reason.contains("starts with a UTF-8 byte-order mark (EF BB BF)")
                == true
        }
        #expect {
            try JSONValue(parsing: Array("[1, ".utf8) + [0xEF, 0xBB, 0xBF] + Array("2]".utf8))
        } throws: { error in
            (error as? JSONParseError).map { $0.offset == 4 && $0.reason.contains("byte-order mark") } == true
        }
    }
}
