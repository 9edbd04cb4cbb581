import BatonSync
import SOQL

extension TargetSupport {
    /// What the server deleted of `types` from `since` to `until` (ms since 1970), by
    /// `sObject Get Deleted`, one request a type. The first type's ids are the target's records,
    /// the second's (a parent-children target's children) its children.
    ///
    /// Salesforce ignores the seconds of both ends and wants them more than a minute apart: a
    /// shorter window is ``DeletedSince/tooSoon`` without a request. A window the server no
    /// longer holds (`INVALID_REPLICATION_DATE`, or an `earliestDateAvailable` past its start)
    /// is ``DeletedSince/expired(_:)``. The answer covers up to the earliest
    /// `latestDateCovered` of the types.
    static func deletedSince(
        _ since: Int64, until: Int64, types: [String], client: RESTClient
    ) async throws -> DeletedSince {
        func minute(_ millis: Int64) -> Int64 { millis - ((millis % 60_000) + 60_000) % 60_000 }
        guard minute(until) - minute(since) > 60_000 else { return .tooSoon }
        var answers: [DeletedRecords] = []
        for type in types {
            do {
                answers.append(try await client.getDeleted(type: type, start: since, end: until))
            } catch let error as RESTError where error.errorCode == "INVALID_REPLICATION_DATE" {
                return .expired("\(type): \(error.message)")
            }
        }
        for (type, answer) in zip(types, answers) {
            if let earliest = answer.earliestDateAvailable, earliest > minute(since) {
                return .expired(
                    "\(type): the delete log starts at \(DateTimeLiteral.format(milliseconds: earliest)), after \(DateTimeLiteral.format(milliseconds: since))"
                )
            }
        }
        // An answer without latestDateCovered moves the window nowhere: the same ids next time.
        let covered = answers.map { $0.latestDateCovered ?? since }.min() ?? since
        return .deleted(
            ids: Set(answers.first.map { Array($0.deleted.keys) } ?? []),
            childIds: Set(answers.dropFirst().first.map { Array($0.deleted.keys) } ?? []),
            coveredUntil: max(since, covered))
    }
}
