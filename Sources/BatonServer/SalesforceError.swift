import BatonJSON

/// An error in the shape the Salesforce REST API uses: an HTTP status and
/// `[{"errorCode": …, "message": …, "fields": […]}]`.
public struct SalesforceError: Error, Sendable, Hashable {
    public var status: Int
    public var errorCode: String
    public var message: String
    public var fields: [String]

    public init(status: Int, _ errorCode: String, _ message: String, fields: [String] = []) {
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.fields = fields
    }

    /// One element of the error array.
    var element: JSONValue {
        var object: JSONObject = ["errorCode": .string(errorCode), "message": .string(message)]
        if !fields.isEmpty { object["fields"] = .array(fields.map(JSONValue.string)) }
        return .object(object)
    }

    /// One element of the error array a record's write answers (a composite subrequest's body):
    /// `fields` always there, empty when the error names none, as a client tells a refusal of
    /// a field from one of the record itself by it.
    var recordElement: JSONValue {
        .object([
            "errorCode": .string(errorCode), "message": .string(message),
            "fields": .array(fields.map(JSONValue.string)),
        ])
    }

    /// The per-record error shape of sObject Collections responses.
    var compositeElement: JSONValue {
        .object([
            "statusCode": .string(errorCode), "message": .string(message),
            "fields": .array(fields.map(JSONValue.string)),
        ])
    }

    static func notFound(_ what: String = "The requested resource does not exist") -> SalesforceError {
        SalesforceError(status: 404, "NOT_FOUND", what)
    }

    static func malformedQuery(_ message: String) -> SalesforceError {
        SalesforceError(status: 400, "MALFORMED_QUERY", message)
    }

    static func badRequest(_ message: String) -> SalesforceError {
        SalesforceError(status: 400, "JSON_PARSER_ERROR", message)
    }

    /// An unknown field in a query or a field list, worded as Salesforce words it.
    static func noSuchColumn(_ name: String, on object: String) -> SalesforceError {
        SalesforceError(
            status: 400, "INVALID_FIELD",
            "No such column '\(name.prefix(80))' on entity '\(object)'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.",
            fields: [String(name.prefix(80))])
    }

    /// `REQUIRED_FIELD_MISSING`, naming the fields as Salesforce does.
    static func requiredFieldsMissing(_ names: [String]) -> SalesforceError {
        SalesforceError(
            status: 400, "REQUIRED_FIELD_MISSING",
            "Required fields are missing: [\(names.joined(separator: ", "))]", fields: names)
    }

    static let invalidSession = SalesforceError(
        status: 401, "INVALID_SESSION_ID", "Session expired or invalid")

    static func serverManaged(_ field: String) -> SalesforceError {
        SalesforceError(
            status: 400, "INVALID_FIELD_FOR_INSERT_UPDATE",
            "Unable to create/update fields: \(field). Please check the security settings of this field.",
            fields: [field])
    }
}
