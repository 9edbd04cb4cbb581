import BatonStore
import Testing

@testable import BatonSync

/// How a fetched record meets the store's copy, case by case.
@Suite("Fetched record merge")
struct FetchedRecordMergeTests {
    static let server: JSONObject = [
        "Id": "001A", "Name": "server", "LastModifiedDate": "2026-01-01T00:00:05.000+0000",
    ]

    static func stored(dirty: Bool, name: String = "server", stamp: String = "2026-01-01T00:00:05.000+0000")
        -> JSONObject
    {
        var record = LocalFlags.clean(
            ["Id": "001A", "Name": .string(name), "LastModifiedDate": .string(stamp)], syncId: 7)
        if dirty { record = LocalFlags.markUpdated(record) }
        return record
    }

    static let newer = "2026-01-01T00:00:09.000+0000"

    @Test(
        "each case: mode, run, the stored copy, the decision",
        arguments: [
            // A new record is written.
            (false, false, nil, FetchedRecordMerge.write),
            (true, true, nil, .write),
            // The same clean copy is left alone; a different one is written.
            (false, true, stored(dirty: false), .unchanged),
            (false, false, stored(dirty: false), .unchanged),
            (false, true, stored(dirty: false, name: "old"), .write),
            // leaveIfChanged keeps every local change.
            (true, false, stored(dirty: true, name: "mine"), .keepLocal),
            (true, true, stored(dirty: true, name: "mine", stamp: newer), .keepLocal),
            // overwrite: an incremental run keeps a change whose server copy has not moved...
            (false, true, stored(dirty: true, name: "mine"), .keepLocal),
            // ...and overwrites one whose server copy has (a later stamp), or any on a full run.
            (false, true, stored(dirty: true, name: "mine", stamp: "2026-01-01T00:00:01.000+0000"), .write),
            (false, false, stored(dirty: true, name: "mine"), .write),
        ] as [(Bool, Bool, JSONObject?, FetchedRecordMerge)])
    func decide(leaveIfChanged: Bool, incremental: Bool, existing: JSONObject?, expected: FetchedRecordMerge)
    {
        let decision = FetchedRecordMerge.decide(
            existing: existing, fetched: Self.server, leaveIfChanged: leaveIfChanged,
            incremental: incremental,
            dateField: "LastModifiedDate", syncId: 7)
        #expect(decision == expected)
    }

    @Test("a copy saved by another sync is written again, to take this sync's id")
    func otherSync() {
        let theirs = LocalFlags.clean(Self.server, syncId: 3)
        #expect(
            FetchedRecordMerge.decide(
                existing: theirs, fetched: Self.server, leaveIfChanged: false, incremental: true,
                dateField: "LastModifiedDate", syncId: 7) == .write)
    }

    @Test("without a stamp on the fetched copy, overwrite overwrites a local change")
    func noStamp() {
        var fetched = Self.server
        fetched["LastModifiedDate"] = nil
        var mine = LocalFlags.markUpdated(LocalFlags.clean(fetched, syncId: 7))
        mine["Name"] = "mine"
        #expect(
            FetchedRecordMerge.decide(
                existing: mine, fetched: fetched, leaveIfChanged: false, incremental: true,
                dateField: "LastModifiedDate", syncId: 7) == .write)
    }
}

/// A sync's position as the sync-state row keeps it.
@Suite("Sync down position in the store")
struct SyncDownPositionRowTests {
    func row(
        modifiedSince: Int64?, runServerTime: Int64? = nil, afterId: String? = nil, maxTimeStamp: Int64 = -1
    )
        -> SyncStateRow
    {
        SyncStateRow(
            name: "s", type: "syncDown", target: [:], options: [:], soupName: "accounts", status: "done",
            maxTimeStamp: maxTimeStamp, modifiedSince: modifiedSince, runServerTime: runServerTime,
            resumeAfterId: afterId)
    }

    @Test("every position makes the round trip through the row")
    func roundTrip() throws {
        let positions = [
            SyncDownPosition(),
            SyncDownPosition(modifiedSince: 1_000),
            SyncDownPosition(modifiedSince: nil, run: .init(serverTime: 5_000)),
            SyncDownPosition(modifiedSince: 1_000, run: .init(serverTime: nil, afterId: "001B")),
            SyncDownPosition(modifiedSince: 0, run: .init(serverTime: 9_000, afterId: "001C")),
        ]
        for position in positions {
            var state = try SyncState(row: row(modifiedSince: -1))
            state.position = position
            #expect(try SyncState(row: state.row).position == position)
        }
    }

    @Test("a row from before positions fetches every record once, as an incremental run")
    func legacyRow() throws {
        #expect(
            try SyncState(row: row(modifiedSince: nil, maxTimeStamp: 1_700_000_000_000)).position
                == SyncDownPosition(modifiedSince: 0))
        // One that never saved a record runs from the start.
        #expect(try SyncState(row: row(modifiedSince: nil)).position == SyncDownPosition())
    }
}
