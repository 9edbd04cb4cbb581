import BatonStore
import BatonTestSupport
import GRDB
import Testing

/// Issue 53: a write to the store's tables by anything other than Baton is refused by the write
/// guards, and one that got past them (a guard dropped first) is found by the audit's check.
@Suite("Writes from outside Baton")
struct ForeignWriteTests {
    /// A connection of its own on the store, as `sqlite3` opens it: no function of Baton's.
    static func foreign(_ store: SharedStore) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: store.directory.storePath, configuration: configuration)
    }

    static let statements: [(table: String, sql: String)] = [
        ("soup_1", "INSERT INTO soup_1 (json, created, lastModified) VALUES ('{\"Id\":\"planted\"}', 0, 0)"),
        ("soup_1", "UPDATE soup_1 SET json = '{\"Id\":\"changed\"}'"),
        ("soup_1", "DELETE FROM soup_1"),
        ("sync_state", "UPDATE sync_state SET options = '{not json'"),
        ("soup_registry", "DELETE FROM soup_registry"),
        ("lease_history", "INSERT INTO lease_history (epoch, name, pid, acquired) VALUES (99, 'x', 1, 0)"),
        ("commit_log", "DELETE FROM commit_log"),
    ]

    @Test("an INSERT, UPDATE or DELETE from another connection is refused, and changes nothing")
    func refused() async throws {
        let fixture = try StoreFixture()
        try await fixture.unfenced.write { transaction in
            try transaction.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            _ = try transaction.upsert(["Id": "001"], into: "accounts")
        }
        let before = try Self.contents(fixture.store)
        let queue = try Self.foreign(fixture.store)
        for (table, sql) in Self.statements {
            #expect(throws: DatabaseError.self, "\(table): \(sql)") {
                try queue.write { try $0.execute(sql: sql) }
            }
            do {
                try await queue.write { try $0.execute(sql: sql) }
            } catch let error as DatabaseError {
                #expect(error.message?.contains("no such function: baton_write_guard") == true, "\(error)")
            }
        }
        #expect(try Self.contents(fixture.store) == before)
        // Reads are not guarded.
        #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM soup_1") } == 1)
        #expect(try await fixture.store.read { try $0.unguardedTables() }.isEmpty)
    }

    @Test("a soup registered later is guarded as well; Baton's own writes pass")
    func newSoupGuarded() async throws {
        let fixture = try StoreFixture()
        try await fixture.unfenced.write { transaction in
            for name in ["a", "b", "c"] { try transaction.registerSoup(name, indexSpecs: []) }
            _ = try transaction.upsert(["x": 1], into: "c")
        }
        try await fixture.unfenced.write { try $0.dropSoup("b") }
        #expect(try await fixture.store.read { try $0.unguardedTables() }.isEmpty)
        #expect(throws: DatabaseError.self) {
            try Self.foreign(fixture.store).write { try $0.execute(sql: "DELETE FROM soup_3") }
        }
    }

    @Test("Baton's own connections run no trigger: one planted by another connection never fires")
    func ownWritesRunNoTrigger() async throws {
        let fixture = try StoreFixture()
        try await fixture.unfenced.write { transaction in
            try transaction.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
            _ = try transaction.upsert(["Id": "001"], into: "accounts")
        }
        // Triggers that refuse every write, whatever functions the connection has.
        try await Self.foreign(fixture.store).write { db in
            for event in ["INSERT", "UPDATE", "DELETE"] {
                try db.execute(
                    sql: """
                        CREATE TRIGGER planted_\(event.lowercased()) BEFORE \(event) ON soup_1
                        BEGIN SELECT RAISE(ABORT, 'planted trigger ran'); END
                        """)
            }
        }
        let entries = try await fixture.unfenced.write { transaction in
            try transaction.upsert(
                [["Id": "001", "Name": "changed"], ["Id": "002"], ["Id": "003"]], into: "accounts",
                externalIdPath: "Id")
        }
        let deleted = try await fixture.unfenced.write { transaction in
            try transaction.delete(entryIds: [entries[2].entryId], from: "accounts")
        }
        #expect(deleted == 1)
        let names = try await fixture.store.read { reader in
            try reader.query(SoupQuery(), in: "accounts").map {
                "\($0.record["Id"]?.stringValue ?? "?") \($0.record["Name"]?.stringValue ?? "-")"
            }
        }
        #expect(names.sorted() == ["001 changed", "002 -"])
        // Another connection's statements still compile them.
        #expect(throws: DatabaseError.self) {
            try Self.foreign(fixture.store).write { try $0.execute(sql: "DELETE FROM soup_1") }
        }
    }

    @Test("a guard dropped or changed is found, naming its table")
    func dropped() async throws {
        let fixture = try StoreFixture()
        try await fixture.unfenced.write { try $0.registerSoup("accounts", indexSpecs: []) }
        let queue = try Self.foreign(fixture.store)
        try await queue.write { db in
            // What a determined user does: drop the guard, then write.
            try db.execute(sql: "DROP TRIGGER baton_guard_soup_1_insert")
            try db.execute(sql: "INSERT INTO soup_1 (json, created, lastModified) VALUES ('{}', 0, 0)")
            try db.execute(sql: "DROP TRIGGER baton_guard_sync_state_update")
            try db.execute(
                sql:
                    "CREATE TRIGGER baton_guard_sync_state_update BEFORE UPDATE ON sync_state BEGIN SELECT 1; END"
            )
        }
        let unguarded = try await fixture.store.read { try $0.unguardedTables() }
        #expect(unguarded.count == 2, "\(unguarded)")
        #expect(unguarded.contains { $0.hasPrefix("soup_1: its INSERT guard") && $0.contains("is gone") })
        #expect(
            unguarded.contains { $0.hasPrefix("sync_state: its UPDATE guard") && $0.contains("was changed") })
    }

    /// Every row of every table Baton writes, as text.
    static func contents(_ store: SharedStore) throws -> [String] {
        try Self.foreign(store).read { db in
            var rows: [String] = []
            for table in ["soup_1", "sync_state", "soup_registry", "lease_history", "commit_log"] {
                rows += try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { "\(table): \($0)" }
            }
            return rows
        }
    }
}
