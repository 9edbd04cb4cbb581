import BatonJSON
// JSONValue's parser (in place, over the bytes) and printer.
// Invariants: an accepted text prints to a text that parses to the same value and prints the
// same again; the String and byte entry points agree; a refused text names a byte inside it; the
// "omitting" parse equals the full parse with that member taken out.
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let value: JSONValue
    do {
        value = try JSONValue(parsing: bytes, maxDepth: 64)
    } catch let error as JSONParseError {
        require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside 0...\(size)")
        if let text = fuzzText(bytes) {
            require(
                (try? JSONValue(parsing: text, maxDepth: 64)) == nil, "String entry accepts what bytes refuse"
            )
        }
        for depth in 1...3 {
            let omitted = try? JSONValue(parsing: bytes, maxDepth: 64, omitting: "a", atDepth: depth)
            require(omitted == nil, "the omitting parse accepts what the full parse refuses")
        }
        return 0
    } catch {
        fatalError("untyped error \(error)")
    }
    if let text = fuzzText(bytes) {
        require((try? JSONValue(parsing: text, maxDepth: 64)) == value, "String entry disagrees")
    }
    for sorted in [true, false] {
        let printed = value.jsonText(sortedKeys: sorted)
        let reparsed: JSONValue
        do {
            reparsed = try JSONValue(parsing: printed, maxDepth: 64)
        } catch {
            fatalError("printed text does not parse: \(error)")
        }
        require(reparsed == value, "parse → print → parse changed the value")
        if sorted { require(reparsed.jsonString == printed, "printing is not stable") }
    }
    for depth in 1...3 {
        for key in ["attributes", "a", ""] {
            let omitted = try? JSONValue(parsing: bytes, maxDepth: 64, omitting: key, atDepth: depth)
            require(omitted == removing(key, atDepth: depth, from: value, depth: 1), "omitting parse differs")
        }
    }
    return 0
}

/// `value` with every member `key` of the objects at `target` depth removed (1 is the outermost).
func removing(_ key: String, atDepth target: Int, from value: JSONValue, depth: Int) -> JSONValue {
    switch value {
    case .object(var object):
        if depth == target { object[key] = nil }
        return .object(object.mapValues { removing(key, atDepth: target, from: $0, depth: depth + 1) })
    case .array(let array):
        return .array(array.map { removing(key, atDepth: target, from: $0, depth: depth + 1) })
    default:
        return value
    }
}
