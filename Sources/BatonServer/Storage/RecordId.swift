/// Salesforce-style 18-character record ids: a 3-character key prefix per type, a 12-character
/// sequence, and the 3-character case-safety suffix of the real format.
enum RecordId {
    static let knownPrefixes = [
        "Account": "001", "Contact": "003", "Opportunity": "006", "User": "005", "Lead": "00Q", "Case": "500",
        "Task": "00T",
    ]
    static let base62 = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    /// The key prefix of a type: known types keep Salesforce's; others get a stable `a` + 2 chars.
    static func prefix(for type: String) -> String {
        if let known = knownPrefixes[type] { return known }
        var hash: UInt32 = 2_166_136_261
        for byte in type.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return "a" + String(base62[Int(hash % 62)]) + String(base62[Int((hash / 62) % 62)])
    }

    /// The id for sequence number `sequence` of `type`.
    static func make(type: String, sequence: Int64) -> String {
        make(prefix: prefix(for: type), sequence: sequence)
    }

    /// The id with key prefix `prefix` (3 characters) for sequence number `sequence`.
    static func make(prefix: String, sequence: Int64) -> String {
        var digits: [Character] = []
        var value = sequence
        for _ in 0..<12 {
            digits.append(base62[Int(value % 62)])
            value /= 62
        }
        let id15 = prefix + String(digits.reversed())
        return id15 + suffix(id15)
    }

    /// The case-safety suffix: for each 5-character chunk, a bit per upper-case letter.
    static func suffix(_ id15: String) -> String {
        let chars = Array(id15)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")
        var out = ""
        for chunk in 0..<3 {
            var bits = 0
            for position in 0..<5 where chars[chunk * 5 + position].isUppercase {
                bits |= 1 << position
            }
            out.append(alphabet[bits])
        }
        return out
    }
}
