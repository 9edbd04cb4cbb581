import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
import GRDB
import Logging
import Testing

@Suite("Stored syncs")
struct SyncStateTests {
    func store(with row: SyncStateRow) throws -> (TemporaryDirectory, SharedStore) {
        let temp = try TemporaryDirectory()
        let unfenced = try UnfencedStore.open(
            directory: try SharedDirectory(path: temp.path + "/d"), logger: Logger(label: "test"))
        let store = unfenced.store
        try unfenced.write { transaction in
            _ = try transaction.insertSyncState(
                SyncStateRow(
                    name: "fine", type: "syncDown",
                    target: ["type": "soql", "query": "SELECT Id FROM Account"],
                    options: [:], soupName: "accounts", status: "done", progress: 100, totalSize: 1))
            _ = try transaction.insertSyncState(row)
        }
        return (temp, store)
    }

    @Test(
        "a stored sync with an unknown type or status is an error naming it, never read as another",
        arguments: [("syncSideways", "done", "type 'syncSideways'"), ("syncUp", "paused", "status 'paused'")])
    func unknownTypeOrStatus(type: String, status: String, named: String) throws {
        let (temp, store) = try store(
            with: SyncStateRow(
                name: "odd", type: type, target: ["type": "rest", "objectType": "Account"], options: [:],
                soupName: "accounts", status: status, progress: 0, totalSize: -1))
        defer { _ = temp }
        #expect {
            try SyncState.all(store)
        } throws: { error in
            guard let error = error as? SyncError, error.code == .unreadableSync else { return false }
            return error.message.contains("'odd' (#2)") && error.message.contains(named)
        }
        #expect(throws: SyncError.self) { try SyncState.byName("odd", store: store) }
        // The readable one still reads.
        #expect(try SyncState.byId(1, store: store)?.status == .done)
    }

    @Test(
        "one row that cannot be read hides no other: listed with what is wrong, naming it",
        arguments: [
            ("options", "{not json", "has options that are not a JSON object (malformed JSON at byte 1"),
            ("target", "", "has a target that is not a JSON object (malformed JSON at byte 0"),
            ("type", "syncSideways", "has an unknown type 'syncSideways'"),
            ("status", "paused", "has an unknown status 'paused'"),
            ("maxTimeStamp", "yesterday", "has a maxTimeStamp that is not an integer"),
        ])
    func oneBadRowHidesNoOther(column: String, value: String, problem: String) throws {
        let (temp, store) = try store(
            with: SyncStateRow(
                name: "odd", type: "syncUp", target: ["type": "rest", "objectType": "Account"], options: [:],
                soupName: "accounts", status: "failed", progress: 0, totalSize: -1, error: "HTTP 500"))
        defer { _ = temp }
        // As a user who got past the write guard would.
        var configuration = Configuration()
        configuration.prepareDatabase { try WriteGuards.register(on: $0) }
        try DatabaseQueue(path: store.directory.storePath, configuration: configuration).write {
            try $0.execute(sql: "UPDATE sync_state SET \(column) = ? WHERE id = 2", arguments: [value])
        }

        let listed = try StoredSync.all(store)
        #expect(listed.map(\.id) == [1, 2])
        #expect(listed.map(\.name) == ["fine", "odd"])
        guard case .readable(let fine) = listed[0], case .unreadable(let odd) = listed[1] else {
            Issue.record("listed: \(listed)")
            return
        }
        #expect(fine.status == .done)
        #expect(odd.problem.hasPrefix(problem), "\(odd.problem)")
        #expect(odd.error == "HTTP 500" && odd.soupName == "accounts")
        #expect(odd.cause.message.hasPrefix("sync 'odd' (#2) in the store \(problem)"), "\(odd.cause)")
        // By status too: the bad row is listed under its stored status, the good one under its own.
        #expect(try StoredSync.all(store, status: .done).map(\.id) == [1])
        // The strict reads throw the cause, naming the sync, never a bare parse error.
        #expect {
            try SyncState.all(store)
        } throws: { error in
            (error as? SyncError)?.code == .unreadableSync && "\(error)".contains("'odd' (#2)")
        }
        #expect(throws: SyncError.self) { try SyncState.byId(2, store: store) }
        #expect(try SyncState.byId(1, store: store)?.status == .done)
    }
}
