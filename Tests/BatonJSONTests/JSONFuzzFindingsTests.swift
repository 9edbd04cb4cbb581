import BatonJSON
import Testing

/// Inputs the fuzz targets (`Scripts/fuzz.sh json`, `json-scanner`) found, each kept as a case:
/// what the parser must do with them now.
@Suite("JSON: inputs found by fuzzing")
struct JSONFuzzFindingsTests {
    @Test(
        "a number too large for a double is refused at its first byte (it printed as null and read back as null)",
        arguments: ["123456e78901234567890", "[1, -1e400]", "{\"a\": 1.5e309}"])
    func outOfRange(_ text: String) throws {
        #expect {
            try JSONValue(parsing: text)
        } throws: { error in
            guard let error = error as? JSONParseError else { return false }
            // The offset is the number's first byte: a digit or its minus sign.
            return error.reason == "number out of range"
                && text.utf8.dropFirst(error.offset).first.map {
                    $0 == UInt8(ascii: "-") || (48...57).contains($0)
                }
                    == true
        }
    }

    @Test(
        "numbers at the edges of a double still read back exactly",
        arguments: ["1.7976931348623157e308", "5e-324", "1e-400"])
    func edges(_ text: String) throws {
        let value = try JSONValue(parsing: text)
        #expect(try JSONValue(parsing: value.jsonText(sortedKeys: true)) == value)
    }

    @Test(
        "a member left out by the omitting parse, or skipped by the scanner, is checked like any other: bad escapes and bad UTF-8 are refused",
        arguments: [
            Array(#"{"a":"\(name)"}"#.utf8),
            Array(#"{"a":"at\"#.utf8) + [0x9E, 0x22, 0x7D],
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xDD, 0xDD, 0x22, 0x7D],
            Array(#"{"a":"\uD800x"}"#.utf8),
            Array(#"{"a":"\u12G4"}"#.utf8),
            Array(#"{"a":5,"a":5555E555555555}"#.utf8),
        ])
    func skippedValuesChecked(_ bytes: [UInt8]) throws {
        let buffer = bytes
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: buffer) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: buffer, omitting: "a", atDepth: 1) }
        var members: [JSONMember] = []
        #expect(throws: JSONParseError.self) {
            try buffer.withUnsafeBufferPointer { try JSONObjectScanner.members(of: $0, into: &members) }
        }
    }

    @Test("skipped strings with good escapes and UTF-8 are still accepted")
    func skippedValuesAccepted() throws {
        let text = #"{"a":"é \" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude80 🚀","b":1}"#
        #expect(try JSONValue(parsing: Array(text.utf8), omitting: "a", atDepth: 1) == ["b": 1])
        var members: [JSONMember] = []
        try Array(text.utf8).withUnsafeBufferPointer { try JSONObjectScanner.members(of: $0, into: &members) }
        #expect(members.count == 2)
    }
}
