import BatonJSON
import BatonLocking

/// Transactions begun through `/admin/transactions` and not yet committed: stamped when they
/// begin, visible only once committed, as a Salesforce transaction that runs long (a bulk job,
/// a slow trigger) shows its records after ones stamped later. On the ideal clock they are
/// stamped when they commit.
final class HeldTransactions: Sendable {
    /// One held transaction: what it will write, and the stamp it took when it began.
    struct Held: Sendable {
        var type: String
        /// Records it updates with ``fields``.
        var ids: [String]
        /// Records it creates with ``fields`` (named `TYPE held N`).
        var creates: Int
        var fields: JSONObject
        /// Nil on the ideal clock.
        var stamp: Int64?
    }

    /// At most this many open at once, so a forgetful client cannot grow the server.
    static let limit = 1000

    private let state = Locked<(open: [String: Held], next: Int)>(([:], 0))

    /// Keeps `held` open; returns its id (`tx1`, `tx2`…).
    func begin(_ held: Held) throws -> String {
        try state.withLock { state in
            guard state.open.count < Self.limit else {
                throw SalesforceError(
                    status: 400, "LIMIT_EXCEEDED",
                    "\(Self.limit) held transactions are open; commit or roll some back first")
            }
            state.next += 1
            let id = "tx\(state.next)"
            state.open[id] = held
            return id
        }
    }

    /// Takes the transaction `id` out (to commit or roll back); `404 NOT_FOUND` when there is none.
    func take(_ id: String) throws -> Held {
        guard let held = state.withLock({ $0.open.removeValue(forKey: id) }) else {
            throw SalesforceError.notFound("no held transaction \(id.prefix(40))")
        }
        return held
    }

    /// How many are open.
    var count: Int { state.withLock { $0.open.count } }

    /// The oldest stamp an open one took (nil: none open, or the ideal clock).
    var oldestStamp: Int64? { state.withLock { $0.open.values.compactMap(\.stamp).min() } }
}

extension RecordStorage {
    /// Writes a held transaction: its updates and creates, every record with the stamp it took
    /// when it began (on Salesforce's clock). Returns the ids written, updates first.
    func commit(_ held: HeldTransactions.Held) throws -> [String] {
        try RecordStorage.$startedStamp.withValue(held.stamp) {
            try write { db in
                var written: [String] = []
                for id in held.ids where try storedFields(db, type: held.type, id: id) != nil {
                    try update(db, type: held.type, id: id, fields: held.fields)
                    written.append(id)
                }
                for index in 0..<held.creates {
                    var fields = held.fields
                    fields["Name"] = fields["Name"] ?? .string("\(held.type) held \(index + 1)")
                    written.append(try create(db, type: held.type, fields: fields))
                }
                return written
            }
        }
    }
}
