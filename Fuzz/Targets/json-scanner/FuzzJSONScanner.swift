import BatonJSON
// JSONObjectScanner: finds an object's members as byte ranges, without building values.
// Invariants: it accepts exactly the texts the full parser accepts as an object (of nesting the
// scanner allows); each member's key decodes to the parsed key and its value range parses to
// the parsed value; a refused text names a byte inside it.
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    var members: [JSONMember] = []
    let parsed = try? JSONValue(parsing: bytes, maxDepth: 256)
    do {
        try JSONObjectScanner.members(of: bytes, into: &members)
    } catch let error as JSONParseError {
        require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside 0...\(size)")
        if case .object = parsed { fatalError("the scanner refuses an object the parser accepts") }
        return 0
    } catch {
        fatalError("untyped error \(error)")
    }
    guard case .object(let object) = parsed else { fatalError("the scanner accepts what the parser refuses") }
    var seen: [String: JSONValue] = [:]
    for member in members {
        require(member.key.lowerBound >= 0 && member.key.upperBound <= size, "key range outside the text")
        require(
            member.value.lowerBound >= 0 && member.value.upperBound <= size, "value range outside the text")
        let key: String
        do {
            key = try JSONObjectScanner.key(member, in: bytes)
        } catch {
            fatalError("an accepted member's key does not decode: \(error)")
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: UnsafeBufferPointer(rebasing: bytes[member.value]), maxDepth: 256)
        } catch {
            fatalError("an accepted member's value does not parse: \(error)")
        }
        seen[key] = value
    }
    require(seen == object, "the members found differ from the parsed object")
    return 0
}
