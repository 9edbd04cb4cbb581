/// The rewrites Mobile Sync applies to a sync-down query.
extension SOQLQuery {
    /// True when the top-level ORDER BY starts with `field` (a subquery's ORDER BY never counts).
    public func isOrdered(by field: String) -> Bool {
        orderBy.first.map { $0.field.caseInsensitiveCompare(field) } ?? false
    }

    /// True when the top-level query has an ORDER BY.
    public var hasOrderBy: Bool { !orderBy.isEmpty }

    /// True when the select list names `field` (case-insensitive).
    public func selects(_ field: String) -> Bool {
        fields.contains { $0.fieldName?.caseInsensitiveCompare(field) == true }
    }

    /// True when the query is `SELECT COUNT() …`: it answers a number, not records.
    public var isCount: Bool { fields.contains(.count) }

    /// True when the select list holds `MAX(…)` or `MIN(…)`: the query answers one row of
    /// aggregates, not records.
    public var isAggregate: Bool {
        fields.contains {
            if case .aggregate = $0 { return true }
            return false
        }
    }

    /// The query with each of `fields` appended to the select list unless already there. A
    /// `COUNT()` or aggregate query, which answers no records, is returned as it is.
    public func addingFields(_ names: [String]) -> SOQLQuery {
        guard !isCount, !isAggregate else { return self }
        var copy = self
        for name in names where !copy.selects(name) { copy.fields.append(.field(name)) }
        return copy
    }

    /// The query ordered by `field` (ascending) when it has no top-level ORDER BY; unchanged
    /// otherwise.
    public func addingOrderBy(_ field: String) -> SOQLQuery {
        guard orderBy.isEmpty else { return self }
        var copy = self
        copy.orderBy = [OrderItem(field: field)]
        return copy
    }

    /// The query with `field op value` first in its WHERE clause: `field op value AND (rest)`,
    /// or a new WHERE. ORDER BY, LIMIT and OFFSET are untouched.
    public func addingFilterFirst(field: String, op: ComparisonOperator, value: Literal) -> SOQLQuery {
        var copy = self
        let predicate = Condition.comparison(field: field, op: op, value: value)
        copy.condition = condition.map { .and(predicate, $0) } ?? predicate
        return copy
    }

    /// A time-stamp filter first in the WHERE: `field >= stamp` when `inclusive` (what the sync
    /// engine asks for: records modified since its lower bound), else `field > stamp`.
    public func addingTimeStampFilter(field: String, milliseconds: Int64, inclusive: Bool) -> SOQLQuery {
        addingFilterFirst(
            field: field, op: inclusive ? .greaterOrEqual : .greater,
            value: .dateTime(DateTimeLiteral.format(milliseconds: milliseconds)))
    }

    /// The remote-id form used by clean resync ghosts: `SELECT Id`, same WHERE and LIMIT, no
    /// ORDER BY or OFFSET.
    public var idQuery: SOQLQuery {
        SOQLQuery(
            fields: [.field("Id")], object: object, condition: condition, orderBy: [], limit: limit,
            offset: nil)
    }
}

extension String {
    fileprivate func caseInsensitiveCompare(_ other: String) -> Bool {
        lowercased() == other.lowercased()
    }
}
