import BatonStore
import BatonSync

/// The keys each target type's JSON may have, Mobile Sync 7.1's that ``RESTTargetFactory``
/// reads, with the kind of value each takes. A syncs config is checked against them, so a
/// misspelt key (`qurey`) or a value of the wrong kind (`"batchSize": "200"`) is refused instead
/// of being ignored.
public enum TargetKeys {
    /// The kind of value a key takes.
    public enum Kind: Sendable, Equatable {
        case string
        case integer
        /// A list of strings (field names).
        case strings
        /// An object, itself checked against its own keys.
        case object([String: Kind])
        /// One of these strings.
        case oneOf([String])

        /// What the value should be, for messages.
        public var expected: String {
            switch self {
            case .string: "a string"
            case .integer: "a whole number"
            case .strings: "a list of strings"
            case .object: "an object"
            case .oneOf(let values): values.map { "\"\($0)\"" }.joined(separator: " or ")
            }
        }

        /// Whether `value` is of this kind (an object's members are checked separately); null
        /// is, as the factory reads it as absent.
        public func admits(_ value: JSONValue) -> Bool {
            if value.isNull { return true }
            return switch self {
            case .string: value.stringValue != nil
            case .integer: value.intValue != nil
            case .strings: value.arrayValue.map { $0.allSatisfy { $0.stringValue != nil } } ?? false
            case .object: value.objectValue != nil
            case .oneOf(let values): value.stringValue.map(values.contains) ?? false
            }
        }
    }

    /// Keys every target reads: its type, and the fields holding ids and modification dates.
    static let common: [String: Kind] = [
        "type": .string, "idFieldName": .string, "modificationDateFieldName": .string,
    ]

    /// A parent-children target's `parent`.
    static let parent: [String: Kind] = [
        "sobjectType": .string, "soupName": .string, "idFieldName": .string,
        "modificationDateFieldName": .string,
    ]

    /// A parent-children target's `children`.
    static let children: [String: Kind] = parent.merging([
        "sobjectTypePlural": .string, "parentIdFieldName": .string,
    ]) { first, _ in first }

    static let relationshipType = Kind.oneOf(["MASTER_DETAIL", "LOOKUP"])

    /// The keys of a sync down target of `type`; nil for a type the factory does not build.
    public static func syncDown(_ type: String) -> [String: Kind]? {
        let keys: [String: Kind]
        switch type {
        case "soql":
            keys = [
                "query": .string, "batchSize": .integer, "maxBatchSize": .integer, "overlapSeconds": .integer,
            ]
        case "sosl": keys = ["query": .string]
        case "mru": keys = ["sobjectType": .string, "fieldlist": .strings]
        case "refresh":
            keys = [
                "soupName": .string, "sobjectType": .string, "fieldlist": .strings,
                "coundIdsPerSoql": .integer, "overlapSeconds": .integer,
            ]
        // Their id and date fields are fixed: such keys would be ignored.
        case "metadata": return ["type": .string, "sobjectType": .string]
        case "layout":
            return ["type": .string, "sobjectType": .string, "layoutType": .oneOf(["Full", "Compact"])]
        case "parentChildren":
            keys = [
                "parent": .object(parent), "children": .object(children), "parentFieldlist": .strings,
                "parentSoqlFilter": .string, "childrenFieldlist": .strings,
                "relationshipType": relationshipType, "batchSize": .integer, "overlapSeconds": .integer,
            ]
        default: return nil
        }
        return keys.merging(common) { first, _ in first }
    }

    /// The keys of a sync up target of `type`; nil for a type the factory does not build.
    public static func syncUp(_ type: String) -> [String: Kind]? {
        switch type {
        case "rest":
            [
                "objectType": .string, "batchSize": .integer, "maxBatchSize": .integer,
                "createFieldlist": .strings, "updateFieldlist": .strings, "externalIdFieldName": .string,
            ].merging(common) { first, _ in first }
        case "parentChildren":
            [
                "type": .string, "parent": .object(parent), "children": .object(children),
                "relationshipType": relationshipType, "parentCreateFieldlist": .strings,
                "parentUpdateFieldlist": .strings, "childrenCreateFieldlist": .strings,
                "childrenUpdateFieldlist": .strings, "externalIdFieldName": .string,
            ]
        default: nil
        }
    }

    /// The first key of `object` that `keys` does not know or whose value is of the wrong kind,
    /// with its path below `object` and what is wrong; nil when all are right.
    public static func firstProblem(in object: JSONObject, keys: [String: Kind]) -> (
        path: [JSONPathComponent], message: String
    )? {
        for key in object.keys.sorted() {
            let value = object[key] ?? .null
            guard let kind = keys[key] else {
                return ([.key(key)], "unknown key (known: \(keys.keys.sorted().joined(separator: ", ")))")
            }
            guard kind.admits(value) else {
                return ([.key(key)], "\(value.jsonString.prefix(40)) is not \(kind.expected)")
            }
            if case .object(let inner) = kind, let members = value.objectValue,
                let problem = firstProblem(in: members, keys: inner)
            {
                return ([.key(key)] + problem.path, problem.message)
            }
        }
        return nil
    }
}
