import BatonJSON
import Testing

@Suite("JSON round trips")
struct JSONValueTests {
    @Test(
        "values survive print and parse unchanged",
        arguments: [
            JSONValue.object(["name": "Zoë 🚀 日本語", "escaped": "quote\" back\\ nl\n tab\t \u{01}"]),
            .object(["nested": .object(["a": .array([1, 2.5, nil, true, .object(["deep": "x"])])])]),
            .object(["max": .int(Int64.max), "min": .int(Int64.min), "zero": 0]),
            .object([
                "one": 1.0, "tiny": 1e-300, "pi": 3.141592653589793, "big": 1.7976931348623157e308,
                "neg": -0.5,
            ]),
            .array([]), .object([:]), .string(""),
        ])
    func roundTrip(value: JSONValue) throws {
        let text = value.jsonString
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("a double with no fraction stays a double")
    func doubleStaysDouble() throws {
        #expect(try JSONValue(parsing: "1.0") == .double(1))
        #expect(JSONValue.double(1).jsonString == "1.0")
        #expect(try JSONValue(parsing: "1") == .int(1))
    }

    @Test("unicode escapes, including surrogate pairs, decode")
    func unicodeEscapes() throws {
        #expect(try JSONValue(parsing: #""\u00e9\ud83d\ude80""#) == .string("é🚀"))
    }

    @Test(
        "malformed text is a typed error",
        arguments: [
            "", "{", "{\"a\":}", "[1,]", "tru", "\"unterminated", "01", "1.", "{\"a\" 1}", "[1] x",
            "\"\\ud800\"",
        ])
    func malformed(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test("nesting deeper than the limit is refused")
    func depthLimit() {
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
    }
}

@Suite("Seeded generator")
struct SplitMix64Tests {
    @Test("one seed, one sequence; another seed, another; draws stay in range")
    func repeats() {
        var a = SplitMix64(seed: 42)
        var b = SplitMix64(seed: 42)
        var c = SplitMix64(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
        for _ in 0..<1000 {
            let draw = a.int(3...9)
            #expect((3...9).contains(draw))
            let unit = a.nextUnit()
            #expect(unit >= 0 && unit < 1)
        }
        let never = a.chance(0)
        let always = a.chance(1)
        #expect(!never && always)
    }
}

@Suite("JSONValue as Codable")
struct JSONValueCodableTests {
    struct Sample: Codable, Equatable {
        var name: String
        var count: Int
        var rate: Double
        var note: String?
        var tags: [String]
        var extra: JSONValue
    }

    @Test("a Codable value turns into JSONValue and back; integers stay integers")
    func roundTrip() throws {
        let sample = Sample(
            name: "a\"b", count: 3, rate: 0.25, note: nil, tags: ["x"], extra: ["n": 1, "f": 1.5, "z": nil])
        let json = try JSONValue(encoding: sample)
        #expect(json.value(atPath: "count") == .int(3))
        #expect(json.value(atPath: "rate") == .double(0.25))
        #expect(json.value(atPath: "extra.n") == .int(1))
        #expect(json.value(atPath: "extra.z") == .null)
        #expect(json.value(atPath: "note") == nil, "a nil optional is left out")
        #expect(try json.decode(as: Sample.self) == sample)
    }

    @Test("JSONValue decodes every kind, and a number with a fraction stays a double")
    func decodesEveryKind() throws {
        let text = #"{"a":[true,false,null,-7,2.5,"s",{"k":[]}]}"#
        let viaCodable = try JSONValue(parsing: text).decode(as: JSONValue.self)
        #expect(viaCodable == (try JSONValue(parsing: text)))
    }

    @Test("a value of the wrong shape is a decoding error, not a default")
    func wrongShape() throws {
        let json: JSONValue = ["name": "a", "count": "three", "rate": 1, "tags": [], "extra": nil]
        #expect(throws: DecodingError.self) { try json.decode(as: Sample.self) }
    }
}
