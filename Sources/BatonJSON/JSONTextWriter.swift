/// Builds compact JSON text as UTF-8 bytes: values, and pieces of text already known to be JSON
/// (a record's stored member, a key written once). Appending to a byte array is several times
/// cheaper than appending to a `String`, which re-checks its storage and its ASCII flag on
/// every append.
public struct JSONTextWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends text that is already JSON, or punctuation (`{`, `,`, `"key":`).
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends bytes that are already JSON (a value cut out of a stored record).
    public mutating func raw(_ text: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: text)
    }

    /// Appends bytes that are already JSON.
    public mutating func raw(_ text: [UInt8]) {
        bytes.append(contentsOf: text)
    }

    /// Appends `s` as a JSON string, quoted and escaped.
    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        stringContents(s)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `s` escaped, without quotes: a piece of a string whose quotes are written apart
    /// (escaping works byte by byte, so pieces escaped apart join into the whole escaped).
    public mutating func stringContents(_ s: String) {
        var copy = s
        copy.withUTF8 { utf8 in
            // A contiguous scan, branch-free so it vectorizes; most strings need no escape.
            if !JSONValue.needsEscape(utf8) {
                bytes.append(contentsOf: utf8)
            } else {
                for byte in utf8 { escape(byte) }
            }
        }
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): raw("\\\"")
        case UInt8(ascii: "\\"): raw("\\\\")
        case UInt8(ascii: "\n"): raw("\\n")
        case UInt8(ascii: "\r"): raw("\\r")
        case UInt8(ascii: "\t"): raw("\\t")
        case 0..<0x20:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            raw("\\u00")
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        default:
            // Bytes of multi-byte UTF-8 sequences are all 0x80 or above: copied as they are.
            bytes.append(byte)
        }
    }

    /// Appends an integer's decimal digits.
    public mutating func int(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            while magnitude > 0 {
                digits[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[(20 - count)...]))
        }
    }

    /// Appends `value`; with `sortedKeys` each object's keys in order, so equal values print
    /// equally; without, in the dictionary's own order (cheaper, for text parsed again).
    public mutating func value(_ value: JSONValue, sortedKeys: Bool) {
        switch value {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .int(let i): int(i)
        case .double(let d):
            if d.isFinite {
                // Swift prints the shortest text that reads back exactly, always with a '.' or
                // an exponent, so a double never turns into an integer on the way back.
                bytes.append(contentsOf: String(d).utf8)
            } else {
                raw("null")
            }
        case .string(let s): string(s)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for element in values {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                self.value(element, sortedKeys: sortedKeys)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            if sortedKeys {
                for key in object.keys.sorted() {
                    if !first { bytes.append(UInt8(ascii: ",")) }
                    first = false
                    member(key, object[key]!, sortedKeys: true)
                }
            } else {
                for (key, element) in object {
                    if !first { bytes.append(UInt8(ascii: ",")) }
                    first = false
                    member(key, element, sortedKeys: false)
                }
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func member(_ key: String, _ element: JSONValue, sortedKeys: Bool) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
        value(element, sortedKeys: sortedKeys)
    }
}
