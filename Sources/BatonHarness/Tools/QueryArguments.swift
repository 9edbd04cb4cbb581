import BatonStore

extension SoupQuery {
    /// The query `baton store query` asks for: `--where PATH=VALUE` (a value is JSON when it
    /// parses as JSON, else a string), `--like PATH=PATTERN`, `--order PATH[:desc]`.
    public init(exact: [String], like: [String], order: [String], limit: Int?, offset: Int) throws {
        func split(_ item: String) throws -> (String, String) {
            guard let equals = item.firstIndex(of: "=") else {
                throw CLIError(message: "'\(item)' is not PATH=VALUE")
            }
            return (String(item[..<equals]), String(item[item.index(after: equals)...]))
        }
        var conditions: [SoupQuery.Condition] = []
        for item in exact {
            let (path, value) = try split(item)
            conditions.append(.exact(path, (try? JSONValue(parsing: value)) ?? .string(value)))
        }
        for item in like {
            let (path, value) = try split(item)
            conditions.append(.like(path, value))
        }
        let orders = order.map { item -> SoupQuery.Order in
            let parts = item.split(separator: ":", maxSplits: 1)
            return SoupQuery.Order(
                String(parts[0]), ascending: parts.count < 2 || parts[1].lowercased() != "desc")
        }
        self.init(where: conditions, orderBy: orders, limit: limit, offset: offset)
    }
}
