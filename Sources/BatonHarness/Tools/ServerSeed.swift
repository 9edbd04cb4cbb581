/// A `baton serve --seed TYPE=COUNT[:TIMESTAMPS]`: records of TYPE to seed, sharing
/// TIMESTAMPS time stamps (fewer than COUNT makes ties).
public struct ServerSeed: Sendable {
    public var type: String
    public var count: Int
    public var timeStamps: Int?

    public init(parsing text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        let numbers = parts.count == 2 ? parts[1].split(separator: ":").map { Int($0) } : []
        guard parts.count == 2, !parts[0].isEmpty, let count = numbers.first ?? nil, count >= 0,
            numbers.count <= 2, numbers.allSatisfy({ $0 != nil && $0! > 0 || $0 == 0 })
        else {
            throw CLIError(
                message:
                    "--seed takes TYPE=COUNT[:TIMESTAMPS], e.g. Account=1000 or Account=100:3; got '\(text)'")
        }
        type = parts[0]
        self.count = count
        timeStamps = numbers.count == 2 ? numbers[1] : nil
    }
}
