import BatonJSON
import Foundation

/// A field's data type, as `describe` names it.
public enum FieldType: String, Sendable, Hashable, CaseIterable {
    case id, string, textarea, picklist, email, phone, url
    case int, double, currency, percent
    case boolean, date, datetime
    /// A lookup: the id of a record of ``FieldDescription/referenceTo``.
    case reference

    /// Whether a JSON value may be written to a field of this type (null always may).
    func accepts(_ value: JSONValue) -> Bool {
        switch value {
        case .null: return true
        case .string: return ![.int, .double, .currency, .percent, .boolean].contains(self)
        case .int, .double: return [.int, .double, .currency, .percent].contains(self)
        case .bool: return self == .boolean
        case .array, .object: return false
        }
    }

    /// The type a seeded or written value suggests, for fields declared by example.
    static func inferred(from value: JSONValue) -> FieldType {
        switch value {
        case .int, .double: return .double
        case .bool: return .boolean
        default: return .string
        }
    }
}

/// One field of an sObject type.
public struct FieldDescription: Sendable, Hashable {
    /// The API name, in its canonical case (`AccountId`).
    public var name: String
    public var type: FieldType
    /// For a lookup: the parent type (`Account`).
    public var referenceTo: String?
    /// For a lookup: the name that reaches the parent in a query (`Account` for `AccountId`,
    /// `Owner` for `OwnerId`, `Parent__r` for `Parent__c`).
    public var relationshipName: String?
    /// For a lookup: the name under which the parent's queries reach the children (`Contacts`).
    public var childRelationshipName: String?
    /// Kept by the server (`Id`, the time stamps): never written by a client.
    public var serverManaged: Bool
    /// The most characters a text value may have (`length` in describe); `nil`: no limit.
    public var length: Int?
    /// A create must give it a value and no write may make it null (`nillable: false`).
    public var required: Bool
    /// A picklist's values, in order.
    public var picklistValues: [String]
    /// Only ``picklistValues`` may be written (`restrictedPicklist` in describe).
    public var restrictedPicklist: Bool
    /// The name people see (`Account Name`), which Salesforce's messages use.
    public var label: String
    /// For a lookup: deleting the parent deletes the records that point to it (master-detail,
    /// and Account's Contacts and Opportunities).
    public var cascadeDelete = false

    public init(
        name: String, type: FieldType, referenceTo: String? = nil, relationshipName: String? = nil,
        childRelationshipName: String? = nil, serverManaged: Bool = false, length: Int? = nil,
        required: Bool = false, picklistValues: [String] = [], restrictedPicklist: Bool = false,
        label: String? = nil
    ) {
        self.name = name
        self.type = type
        self.referenceTo = referenceTo
        self.relationshipName = relationshipName
        self.childRelationshipName = childRelationshipName
        self.serverManaged = serverManaged
        self.length = length
        self.required = required
        self.picklistValues = picklistValues
        self.restrictedPicklist = restrictedPicklist
        self.label = label ?? Self.label(of: name)
    }

    /// `LastName` → `Last Name`, `Rating__c` → `Rating`, `Due_Date__c` → `Due Date`.
    static func label(of name: String) -> String {
        let base = name.hasSuffix("__c") ? String(name.dropLast(3)) : name
        var out = ""
        var previous: Character?
        for character in base {
            if character == "_" {
                if out.last != " " { out.append(" ") }
            } else {
                if character.isUppercase, let previous, previous.isLowercase { out.append(" ") }
                out.append(character)
            }
            previous = character
        }
        return out.trimmingCharacters(in: .whitespaces)
    }

    /// Salesforce's answer when `value` breaks this field's rules (too long, not a value of a
    /// restricted picklist, null where required), or `nil`.
    func violation(by value: JSONValue) -> SalesforceError? {
        switch value {
        case .null where required, .string("") where required:
            return .requiredFieldsMissing([name])
        case .string(let text):
            if let length, text.count > length {
                return SalesforceError(
                    status: 400, "STRING_TOO_LONG",
                    "\(label): data value too large: \(text.prefix(80))\(text.count > 80 ? "…" : "") (max length=\(length))",
                    fields: [name])
            }
            if type == .picklist, restrictedPicklist, !picklistValues.contains(text) {
                return SalesforceError(
                    status: 400, "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
                    "\(label): bad value for restricted picklist field: \(text.prefix(80))", fields: [name])
            }
            return nil
        default:
            return nil
        }
    }
}

/// One sObject type: its name and fields, looked up case-insensitively as Salesforce does.
public struct ObjectDescription: Sendable, Hashable {
    public private(set) var name: String
    public private(set) var fields: [FieldDescription] = []
    private var byName: [String: Int] = [:]
    private var byRelationship: [String: Int] = [:]

    /// A type with the fields every type has: `Id`, `Name`, the time stamps, `OwnerId` (the
    /// `Owner` relationship to `User`) and Baton's external id for creates.
    init(name: String) {
        self.name = name
        add(.init(name: "Id", type: .id, serverManaged: true))
        add(.init(name: "Name", type: .string, length: 255))
        add(.init(name: "CreatedDate", type: .datetime, serverManaged: true))
        add(.init(name: "LastModifiedDate", type: .datetime, serverManaged: true))
        add(.init(name: "SystemModstamp", type: .datetime, serverManaged: true))
        add(.init(name: "OwnerId", type: .reference, referenceTo: "User", relationshipName: "Owner"))
        add(.init(name: ServerSchema.externalIdField, type: .string, length: 255))
    }

    /// Adds a field, or replaces the one of that name.
    mutating func add(_ field: FieldDescription) {
        if let index = byName[field.name.lowercased()] {
            if let old = fields[index].relationshipName { byRelationship[old.lowercased()] = nil }
            fields[index] = field
        } else {
            byName[field.name.lowercased()] = fields.count
            fields.append(field)
        }
        if let relationship = field.relationshipName {
            byRelationship[relationship.lowercased()] = byName[field.name.lowercased()]
        }
    }

    /// The field named `name`, in any case.
    public func field(_ name: String) -> FieldDescription? {
        byName[name.lowercased()].map { fields[$0] }
    }

    /// The lookup field whose relationship is `name` (`Owner` → `OwnerId`).
    public func lookup(relationship name: String) -> FieldDescription? {
        byRelationship[name.lowercased()].map { fields[$0] }
    }
}

/// What the reference server knows of an org's data model: each sObject type's fields, their
/// types and relationships. Queries and writes are checked against it and answered as Salesforce
/// answers unknown names (`INVALID_FIELD`, `INVALID_TYPE`, `NOT_FOUND`).
///
/// The built-in schema has `User`, `Account`, `Contact` and `Opportunity` with their usual
/// fields, the `Contacts`, `Opportunities` and `ChildAccounts` child relationships of `Account`,
/// and the custom fields Baton's tools use. A JSON file (`baton serve --schema FILE`) or an
/// `/admin/seed` body adds types and fields:
///
/// ```json
/// {"objects": [{"name": "Invoice__c", "fields": [
///     {"name": "Amount__c", "type": "currency"},
///     {"name": "Account__c", "type": "reference", "referenceTo": "Account",
///      "relationshipName": "Account__r", "childRelationshipName": "Invoices__r"}]}]}
/// ```
public struct ServerSchema: Sendable, Hashable {
    /// The external id field Baton's sync up creates records with; declared on every type.
    public static let externalIdField = "BatonExternalId__c"

    private var objects: [String: ObjectDescription] = [:]
    /// Child relationships by parent type then relationship name (both lowercased): the child
    /// type and its lookup field.
    private var children: [String: [String: (type: String, field: String)]] = [:]

    public static func == (lhs: ServerSchema, rhs: ServerSchema) -> Bool {
        lhs.objects == rhs.objects
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(objects) }

    /// The type named `name`, in any case.
    public func object(_ name: String) -> ObjectDescription? { objects[name.lowercased()] }

    /// Every declared type, by name.
    public var objectNames: [String] { objects.values.map(\.name).sorted() }

    /// The child type and its lookup field reached from `parent` by `relationship` (`Contacts`).
    public func child(_ relationship: String, of parent: String) -> (ObjectDescription, FieldDescription)? {
        guard let entry = children[parent.lowercased()]?[relationship.lowercased()],
            let type = object(entry.type), let field = type.field(entry.field)
        else { return nil }
        return (type, field)
    }

    /// Adds (or replaces) a field of `type`, declaring the type if it is new.
    /// The lookups of other types (or this one) that name a child relationship to `parent`:
    /// the child type, its lookup field and the relationship's name, sorted by name.
    public func childRelationships(of parent: String) -> [(
        childType: String, field: String, name: String, cascadeDelete: Bool
    )] {
        (children[parent.lowercased()] ?? [:]).map { _, entry in
            let field = object(entry.type)?.field(entry.field)
            return (
                entry.type, entry.field, field?.childRelationshipName ?? entry.field,
                field?.cascadeDelete ?? false
            )
        }.sorted { $0.name < $1.name }
    }

    /// The lookups that delete their record when the record they point to (of `type`) is
    /// deleted: child type and field.
    func cascadingLookups(to type: String) -> [(childType: String, field: String)] {
        objects.values.flatMap { object in
            object.fields.filter { $0.cascadeDelete && $0.referenceTo?.lowercased() == type.lowercased() }
                .map { (object.name, $0.name) }
        }
    }

    public mutating func declare(_ field: FieldDescription, on type: String) {
        var object = objects[type.lowercased()] ?? ObjectDescription(name: type)
        object.add(field)
        objects[type.lowercased()] = object
        indexChildren()
    }

    /// Declares a type with only the fields every type has, if it is not declared yet.
    public mutating func declare(type: String) {
        guard objects[type.lowercased()] == nil else { return }
        objects[type.lowercased()] = ObjectDescription(name: type)
    }

    private mutating func indexChildren() {
        children = [:]
        for object in objects.values {
            for field in object.fields {
                guard let parent = field.referenceTo, let name = field.childRelationshipName else { continue }
                children[parent.lowercased(), default: [:]][name.lowercased()] = (object.name, field.name)
            }
        }
    }

    /// The built-in schema: the standard objects the server seeds, with the usual fields.
    /// The types a new server knows: `User`, `Account`, `Contact` and `Opportunity` with their
    /// common fields, lengths, picklist values and required fields as a new Salesforce org has
    /// them (standard picklists are not restricted), plus the custom fields Baton's demo, chaos
    /// and bench write.
    public static let standard: ServerSchema = {
        var schema = ServerSchema()
        func add(_ type: String, _ fields: [FieldDescription]) {
            schema.declare(type: type)
            for field in fields { schema.declare(field, on: type) }
        }
        func text(_ name: String, _ length: Int, required: Bool = false, label: String? = nil)
            -> FieldDescription
        {
            .init(name: name, type: .string, length: length, required: required, label: label)
        }
        func picklist(_ name: String, _ values: [String], required: Bool = false) -> FieldDescription {
            .init(name: name, type: .picklist, length: 255, required: required, picklistValues: values)
        }
        func cascading(_ field: FieldDescription) -> FieldDescription {
            var field = field
            field.cascadeDelete = true
            return field
        }
        let description = FieldDescription(name: "Description", type: .textarea, length: 32_000)
        add(
            "User",
            [
                text("FirstName", 40), text("LastName", 80), text("Username", 80),
                .init(name: "Email", type: .email, length: 128), .init(name: "IsActive", type: .boolean),
            ])
        let custom: [FieldDescription] = [.init(name: "Number__c", type: .double), text("Rating__c", 255)]
        add(
            "Account",
            [
                text("Name", 255, required: true, label: "Account Name"), text("AccountNumber", 40),
                picklist(
                    "Type", ["Prospect", "Customer - Direct", "Customer - Channel", "Partner", "Other"]),
                picklist(
                    "Industry",
                    ["Agriculture", "Banking", "Chemicals", "Communications", "Education", "Energy", "Other"]),
                picklist("Rating", ["Hot", "Warm", "Cold"]),
                .init(name: "Phone", type: .phone, length: 40),
                .init(name: "Website", type: .url, length: 255),
                description, .init(name: "AnnualRevenue", type: .currency),
                .init(name: "NumberOfEmployees", type: .int),
                .init(name: "BillingStreet", type: .textarea, length: 255), text("BillingCity", 40),
                text("BillingState", 80), text("BillingPostalCode", 20), text("BillingCountry", 80),
                .init(
                    name: "ParentId", type: .reference, referenceTo: "Account", relationshipName: "Parent",
                    childRelationshipName: "ChildAccounts"),
            ] + custom)
        add(
            "Contact",
            [
                text("FirstName", 40), text("LastName", 80, required: true),
                picklist("Salutation", ["Mr.", "Ms.", "Mrs.", "Dr.", "Prof."]), text("Title", 128),
                .init(name: "Email", type: .email, length: 80),
                .init(name: "Phone", type: .phone, length: 40),
                .init(name: "MobilePhone", type: .phone, length: 40), .init(name: "Birthdate", type: .date),
                text("Department", 80), description, text("MailingCity", 40), text("MailingCountry", 80),
                cascading(
                    .init(
                        name: "AccountId", type: .reference, referenceTo: "Account",
                        relationshipName: "Account",
                        childRelationshipName: "Contacts")),
                .init(
                    name: "ReportsToId", type: .reference, referenceTo: "Contact",
                    relationshipName: "ReportsTo",
                    childRelationshipName: "DirectReports"),
            ] + custom)
        add(
            "Opportunity",
            [
                text("Name", 120, required: true, label: "Opportunity Name"),
                picklist(
                    "StageName",
                    [
                        "Prospecting", "Qualification", "Needs Analysis", "Value Proposition",
                        "Negotiation/Review",
                        "Closed Won", "Closed Lost",
                    ], required: true),
                .init(name: "CloseDate", type: .date, required: true),
                .init(name: "Amount", type: .currency), .init(name: "Probability", type: .percent),
                picklist(
                    "Type", ["New Customer", "Existing Customer - Upgrade", "Existing Customer - Downgrade"]),
                picklist("LeadSource", ["Web", "Phone Inquiry", "Partner Referral", "Other"]),
                description, .init(name: "IsClosed", type: .boolean), .init(name: "IsWon", type: .boolean),
                cascading(
                    .init(
                        name: "AccountId", type: .reference, referenceTo: "Account",
                        relationshipName: "Account",
                        childRelationshipName: "Opportunities")),
            ] + custom)
        return schema
    }()

    public init(extending base: ServerSchema = .standard, json: JSONValue) throws {
        self = base
        try merge(json)
    }

    /// The built-in schema with the types and fields of a JSON file added.
    public init(contentsOfFile path: String, extending base: ServerSchema = .standard) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SalesforceError.badRequest("cannot read the schema file \(path)")
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: Array(data), maxDepth: 16)
        } catch {
            throw SalesforceError.badRequest("the schema file \(path) is not JSON: \(error)")
        }
        try self.init(extending: base, json: json)
    }

    init() {}

    /// Adds the types and fields of a schema document.
    mutating func merge(_ json: JSONValue) throws {
        guard let list = json.value(atPath: "objects")?.arrayValue else {
            throw SalesforceError.badRequest("a schema is {\"objects\": [{\"name\": …, \"fields\": […]}]}")
        }
        for entry in list {
            guard let name = entry.value(atPath: "name")?.stringValue, RecordStorage.isTypeName(name) else {
                throw SalesforceError.badRequest("each object needs a valid \"name\"")
            }
            declare(type: name)
            for field in entry.value(atPath: "fields")?.arrayValue ?? [] {
                declare(try Self.field(field, of: name), on: name)
            }
        }
    }

    /// One entry of a schema file's `fields`: `name`, `type` (default `string`), and optionally
    /// `length`, `required`, `picklistValues`, `restrictedPicklist`, and for a `reference`
    /// `referenceTo`, `relationshipName`, `childRelationshipName`.
    static func field(_ json: JSONValue, of object: String) throws -> FieldDescription {
        guard let name = json.value(atPath: "name")?.stringValue, RecordStorage.isFieldName(name) else {
            throw SalesforceError.badRequest("each field of \(object) needs a valid \"name\"")
        }
        let typeName = json.value(atPath: "type")?.stringValue ?? "string"
        guard let type = FieldType(rawValue: typeName) else {
            let known = FieldType.allCases.map(\.rawValue).joined(separator: ", ")
            throw SalesforceError.badRequest(
                "field \(object).\(name): unknown type '\(typeName)' (one of \(known))")
        }
        var field = FieldDescription(name: name, type: type)
        if let label = json.value(atPath: "label") {
            guard let text = label.stringValue, !text.isEmpty else {
                throw SalesforceError.badRequest(
                    "field \(object).\(name): \"label\" must be a non-empty string")
            }
            field.label = text
        }
        if let length = json.value(atPath: "length") {
            guard let value = length.intValue, value > 0, value <= 131_072 else {
                throw SalesforceError.badRequest("field \(object).\(name): \"length\" must be 1–131072")
            }
            field.length = Int(value)
        }
        if let required = json.value(atPath: "required") {
            guard let value = required.boolValue else {
                throw SalesforceError.badRequest(
                    "field \(object).\(name): \"required\" must be true or false")
            }
            field.required = value
        }
        if let values = json.value(atPath: "picklistValues") {
            guard let list = values.arrayValue, type == .picklist else {
                throw SalesforceError.badRequest(
                    "field \(object).\(name): \"picklistValues\" is a list of strings, for a picklist")
            }
            field.picklistValues = try list.map { value in
                guard let text = value.stringValue else {
                    throw SalesforceError.badRequest(
                        "field \(object).\(name): each picklist value is a string")
                }
                return text
            }
        }
        if let restricted = json.value(atPath: "restrictedPicklist") {
            guard let value = restricted.boolValue, type == .picklist else {
                throw SalesforceError.badRequest(
                    "field \(object).\(name): \"restrictedPicklist\" is true or false, for a picklist")
            }
            field.restrictedPicklist = value
        }
        if type == .reference {
            guard let parent = json.value(atPath: "referenceTo")?.stringValue,
                RecordStorage.isTypeName(parent)
            else {
                throw SalesforceError.badRequest("reference field \(object).\(name) needs \"referenceTo\"")
            }
            field.referenceTo = parent
            field.relationshipName =
                json.value(atPath: "relationshipName")?.stringValue ?? Self.defaultRelationship(of: name)
            field.childRelationshipName = json.value(atPath: "childRelationshipName")?.stringValue
            if let cascade = json.value(atPath: "cascadeDelete") {
                guard let value = cascade.boolValue else {
                    throw SalesforceError.badRequest(
                        "field \(object).\(name): \"cascadeDelete\" must be true or false")
                }
                field.cascadeDelete = value
            }
        }
        return field
    }

    /// Salesforce's naming: `AccountId` → `Account`, `Parent__c` → `Parent__r`.
    static func defaultRelationship(of field: String) -> String {
        if field.hasSuffix("__c") { return String(field.dropLast(3)) + "__r" }
        if field.lowercased().hasSuffix("id"), field.count > 2 { return String(field.dropLast(2)) }
        return field
    }
}

extension JSONValue {
    /// The JSON token kind, as Salesforce's parser names it in its errors.
    var kindName: String {
        switch self {
        case .null: return "VALUE_NULL"
        case .bool(let value): return value ? "VALUE_TRUE" : "VALUE_FALSE"
        case .int: return "VALUE_NUMBER_INT"
        case .double: return "VALUE_NUMBER_FLOAT"
        case .string: return "VALUE_STRING"
        case .array: return "START_ARRAY"
        case .object: return "START_OBJECT"
        }
    }
}
