import BatonTime

/// How the reference server stamps `LastModifiedDate`, `SystemModstamp` and `CreatedDate`.
///
/// The server is a test double, so by default it is as hard on a client as Salesforce is.
public enum ServerClock: String, Sendable, CaseIterable, Codable {
    /// Salesforce's clock, the default: stamps in whole seconds (`.000`); every record one
    /// request (one transaction) writes gets that transaction's stamp, taken when it starts;
    /// SOQL comparisons on stamps ignore milliseconds. A transaction that commits late (the
    /// `commitDelayMs` fault, or one held open through `/admin/transactions`) becomes visible
    /// after records stamped later than it.
    case salesforce
    /// A kinder clock, for tests that need it: each record written gets its own strictly
    /// increasing millisecond stamp, taken when it is written, and is visible at once. A held
    /// transaction is stamped when it commits.
    case ideal

    /// `millis` with its milliseconds dropped (toward the past), as Salesforce stores stamps.
    static func wholeSecond(_ millis: Int64) -> Int64 {
        millis - ((millis % 1000) + 1000) % 1000
    }

    /// The stamp a transaction starting now gets on this clock; `nil` on the ideal clock, which
    /// stamps each record as it is written.
    func transactionStamp(now: Int64) -> Int64? {
        switch self {
        case .salesforce: Self.wholeSecond(now)
        case .ideal: nil
        }
    }
}
