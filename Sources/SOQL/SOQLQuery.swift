/// A parsed SOQL query of the subset Mobile Sync uses:
/// `SELECT fields FROM Type [WHERE expr] [ORDER BY …] [LIMIT n] [OFFSET n]`, where the fields
/// may be parent paths, child subqueries, `COUNT()`, or `MAX(field)` and `MIN(field)` alone.
///
/// ```swift
/// var query = try SOQLQuery(parsing: "SELECT Name FROM Account WHERE Industry = 'Energy'")
/// query = query.addingFields(["Id", "LastModifiedDate"]).addingOrderBy("LastModifiedDate")
/// print(query.soql)  // SELECT Name, Id, LastModifiedDate FROM Account WHERE Industry = 'Energy' ORDER BY LastModifiedDate
/// ```
public struct SOQLQuery: Sendable, Hashable {
    /// The select list.
    public var fields: [SelectItem]
    /// The object type after FROM.
    public var object: String
    /// The WHERE expression, if any.
    public var condition: Condition?
    /// The top-level ORDER BY keys.
    public var orderBy: [OrderItem]
    public var limit: Int?
    public var offset: Int?

    public init(
        fields: [SelectItem], object: String, condition: Condition? = nil, orderBy: [OrderItem] = [],
        limit: Int? = nil, offset: Int? = nil
    ) {
        self.fields = fields
        self.object = object
        self.condition = condition
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }
}

/// One entry of a select list.
public enum SelectItem: Sendable, Hashable {
    /// A field or dotted relationship path (`Owner.Name`).
    case field(String)
    /// A parenthesised subquery; parsed and printed, never evaluated.
    indirect case subquery(SOQLQuery)
    /// `COUNT()`: the query answers how many records match, and no records. Alone in its list.
    case count
    /// `MAX(field)` or `MIN(field)`: the query answers one `AggregateResult` row, with the
    /// aggregates as `expr0`, `expr1`… Only with other aggregates (there is no GROUP BY).
    case aggregate(AggregateFunction, String)

    /// The field path, for a field.
    public var fieldName: String? {
        if case .field(let name) = self { return name }
        return nil
    }
}

/// An aggregate function of the subset.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    case max = "MAX"
    case min = "MIN"
}

/// One ORDER BY key.
public struct OrderItem: Sendable, Hashable {
    public var field: String
    public var ascending: Bool
    /// `NULLS FIRST` (true), `NULLS LAST` (false), or unspecified.
    public var nullsFirst: Bool?
    /// Whether ASC was written out (kept so printing reproduces the query).
    public var explicitDirection: Bool

    public init(
        field: String, ascending: Bool = true, nullsFirst: Bool? = nil, explicitDirection: Bool = false
    ) {
        self.field = field
        self.ascending = ascending
        self.nullsFirst = nullsFirst
        self.explicitDirection = explicitDirection || !ascending
    }
}

/// A literal value in a condition.
public enum Literal: Sendable, Hashable {
    case string(String)
    /// A number, kept as written (`42`, `-1.5`).
    case number(String)
    case boolean(Bool)
    case null
    /// `2024-01-31`.
    case date(String)
    /// `2024-01-31T10:00:00Z`, `2024-01-31T10:00:00.000+0000`…
    case dateTime(String)
}

/// A comparison operator.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// A WHERE expression.
public indirect enum Condition: Sendable, Hashable {
    case comparison(field: String, op: ComparisonOperator, value: Literal)
    case like(field: String, pattern: Literal, negated: Bool)
    case isIn(field: String, values: [Literal], negated: Bool)
    case and(Condition, Condition)
    case or(Condition, Condition)
    case not(Condition)
}
