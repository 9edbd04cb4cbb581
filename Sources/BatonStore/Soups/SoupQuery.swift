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
        public var ascending: Bool

        public init(_ path: String, ascending: Bool = true) {
            self.path = path
            self.ascending = ascending
        }
    }

    /// Sorts by the store-assigned entry id.
    public static let entryIdPath = "_soupEntryId"

    public var conditions: [Condition]
    /// Sort keys; entry id is always the final tie-breaker so pages never overlap.
    public var orderBy: [Order]
    public var limit: Int?
    public var offset: Int

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
