/// How an indexed path's values are compared.
public enum IndexType: String, Sendable, Codable, CaseIterable {
    /// Text.
    case string
    /// 64-bit integers.
    case integer
    /// Doubles.
    case floating
    /// Whatever JSON type the value has (SmartStore's `json1`).
    case json1
}

/// One indexed path of a soup, such as `Id` or `Owner.Name`.
public struct IndexSpec: Sendable, Hashable, Codable {
    /// A dotted path into the record.
    public var path: String
    /// How values at the path are compared.
    public var type: IndexType

    /// Makes a spec that indexes `path`, compared as `type`.
    public init(path: String, type: IndexType) {
        self.path = path
        self.type = type
    }

    /// Parses `path:type` (type defaults to `string`), as the CLI takes it.
    public init(parsing text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        let type: IndexType
        if parts.count == 2 {
            guard let parsed = IndexType(rawValue: parts[1]) else {
                throw StoreError(
                    .invalidIndexPath,
                    "unknown index type '\(parts[1])'; use one of \(IndexType.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            type = parsed
        } else {
            type = .string
        }
        try Self.validate(path: parts.first ?? "")
        self.init(path: parts.first ?? "", type: type)
    }

    /// Paths are embedded in SQL expression indexes, so only plain identifiers are allowed.
    ///
    /// - Throws: `invalidIndexPath` unless `path` is dotted identifiers of at most 128 bytes.
    public static func validate(path: String) throws {
        let components = path.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            !path.isEmpty && path.utf8.count <= 128
            && components.allSatisfy { component in
                guard let first = component.utf8.first,
                    !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
                else {
                    return false
                }
                return component.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                }
            }
        guard valid else {
            throw StoreError(
                .invalidIndexPath,
                "'\(path)' is not a valid index path; use dotted identifiers such as Id or Owner.Name")
        }
    }

    /// The SQL expression that reads this path from a record.
    var sqlExpression: String { Self.sqlExpression(path: path) }

    static func sqlExpression(path: String) -> String { "json_extract(json, '$.\(path)')" }
}
