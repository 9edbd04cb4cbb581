/// A query on a soup's indexed paths, evaluated by SQLite (never by loading the soup).
///
/// ```swift
/// let query = SoupQuery(where: [.range("Amount", from: 10, to: 100)], orderBy: [.init("Amount")], limit: 20)
/// ```
public struct SoupQuery: Sendable, Hashable {
    /// One condition on an indexed path. All conditions of a query must hold.
    public enum Condition: Sendable, Hashable {
        /// The value equals.
        case exact(String, JSONValue)
        /// The value is within the bounds (each inclusive, `nil` for open).
        case range(String, from: JSONValue?, to: JSONValue?)
        /// SQL `LIKE` with `%` and `_`.
        case like(String, String)
        /// The value is one of these.
        case isIn(String, [JSONValue])

        var path: String {
            switch self {
            case .exact(let p, _), .range(let p, _, _), .like(let p, _), .isIn(let p, _): return p
            }
        }
    }

    /// One sort key.
    public struct Order: Sendable, Hashable {
        /// An indexed path, or ``SoupQuery/entryIdPath`` for insertion order.
        public var path: String
        /// True to sort from low to high, false for high to low.
        public var ascending: Bool

        /// Makes a sort key on `path`, ascending unless told otherwise.
        public init(_ path: String, ascending: Bool = true) {
            self.path = path
            self.ascending = ascending
        }
    }

    /// Sorts by the store-assigned entry id.
    public static let entryIdPath = "_soupEntryId"

    /// The conditions a record must meet; all must hold (none: every record).
    public var conditions: [Condition]
    /// Sort keys; entry id is always the final tie-breaker so pages never overlap.
    public var orderBy: [Order]
    /// The most records to return, or nil for no limit.
    public var limit: Int?
    /// How many matching records to skip before the first one returned.
    public var offset: Int

    /// Makes a query from its conditions, sort keys, limit and offset (by default every record,
    /// in insertion order).
    public init(where conditions: [Condition] = [], orderBy: [Order] = [], limit: Int? = nil, offset: Int = 0)
    {
        self.conditions = conditions
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    /// Every record, in insertion order.
    public static let all = SoupQuery()

    /// The same query restricted to page `index` (from 0) of `size` records.
    public func page(_ index: Int, size: Int) -> SoupQuery {
        var copy = self
        copy.limit = size
        copy.offset = offset + index * size
        return copy
    }
}
