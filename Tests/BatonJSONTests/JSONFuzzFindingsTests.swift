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
}
