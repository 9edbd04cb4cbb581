import FoundationEssentials

extension JSONValue: Codable {
    /// Decodes any JSON value: an integer stays `.int`, a number with a fraction is `.double`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Each `try?` below probes the value's kind: a mismatch tries the next kind.
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .int(let int): try container.encode(int)
        case .double(let double): try container.encode(double)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}

extension JSONValue {
    /// The JSON form of any `Encodable` value (an optional that is nil is left out of its object).
    public init(encoding value: some Encodable) throws {
        self = try JSONValue(parsing: JSONEncoder().encode(value))
    }

    /// This value read as `type`.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(type, from: Data(jsonString.utf8))
    }

    /// The value of a JSON text read as `type`.
    public static func decode<T: Decodable>(_ type: T.Type = T.self, from bytes: Data) throws -> T {
        try JSONDecoder().decode(type, from: bytes)
    }
}
