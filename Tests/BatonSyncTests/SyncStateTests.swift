import BatonStore
import BatonSync
import BatonTestSupport
import Foundation
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
}
