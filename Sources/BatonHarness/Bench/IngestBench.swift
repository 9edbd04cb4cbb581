import BatonREST
@_spi(Bench) import BatonStore
import BatonSync
import Foundation
import GRDB
import Logging

/// Ingest: a sync down end to end vs. the same records upserted straight into the store (its
/// own limit) vs. a raw loop that writes the same table shape with the same indexes through
/// prepared statements (what SQLite itself can do for this data) vs. a plain
/// `INSERT … ON CONFLICT` loop into a two-column table.
struct IngestBench {
    struct Result {
        var endToEndPerSec: Double
        var storePerSec: Double
        var rawPerSec: Double
        var grdbPerSec: Double
        /// The same query's pages fetched and parsed with nothing saved: the reference server's,
        /// the transport's and the client's share of the sync down.
        var fetchPerSec: Double
        /// Each round's figures, records/s, in the order they ran.
        var rounds: [Round]
    }

    struct Round: Encodable {
        var endToEnd: Double
        var store: Double
        var raw: Double
        var fetch: Double
    }

    /// Rounds of end to end and store-limit runs, alternating; each figure is the median.
    static let rounds = 5

    static func run(_ env: BenchEnvironment, records: Int) async throws -> Result {
        try await env.reseed(records, bytes: 400)
        var pages: [[JSONObject]] = []
        for try await page in env.client.query(
            "SELECT Id, Name, Number__c, Description, LastModifiedDate FROM Account")
        {
            pages.append(page.records)
        }
        // Alternating, so a machine that slows down mid-way weighs on both sides.
        var endToEndTimes: [Double] = []
        var storeTimes: [Double] = []
        var rawTimes: [Double] = []
        var fetchTimes: [Double] = []
        for _ in 0..<rounds {
            fetchTimes.append(try await fetchOnly(env))
            endToEndTimes.append(try await endToEnd(env, records: records))
            storeTimes.append(try await storeLimit(env, pages: pages))
            rawTimes.append(try await rawLoop(env, pages: pages))
        }
        let grdbTime = try await grdbLoop(env, pages: pages)
        return Result(
            endToEndPerSec: Double(records) / BenchStats.percentile(endToEndTimes, 50),
            storePerSec: Double(records) / BenchStats.percentile(storeTimes, 50),
            rawPerSec: Double(records) / BenchStats.percentile(rawTimes, 50),
            grdbPerSec: Double(records) / grdbTime,
            fetchPerSec: Double(records) / BenchStats.percentile(fetchTimes, 50),
            rounds: (0..<rounds).map { index in
                Round(
                    endToEnd: BenchStats.round(Double(records) / endToEndTimes[index], 1),
                    store: BenchStats.round(Double(records) / storeTimes[index], 1),
                    raw: BenchStats.round(Double(records) / rawTimes[index], 1),
                    fetch: BenchStats.round(Double(records) / fetchTimes[index], 1))
            })
    }

    /// Seconds to fetch and parse every page of the sync down's query, saving nothing.
    static func fetchOnly(_ env: BenchEnvironment) async throws -> Double {
        let clock = ContinuousClock()
        let started = clock.now
        var count = 0
        for try await page in env.client.query(
            "SELECT Id, Name, Number__c, Description, LastModifiedDate FROM Account", batchSize: 2000)
        {
            count += page.records.count
        }
        guard count > 0 else { throw CLIError(message: "ingest: the fetch read no records") }
        return BenchStats.seconds(clock.now - started)
    }

    /// Seconds for a sync down of every record: server → REST → SyncManager → store, 2000 per page.
    static func endToEnd(_ env: BenchEnvironment, records: Int) async throws -> Double {
        let shared = try env.freshDirectory()
        let (store, manager, target) = try env.syncDown(
            in: shared, query: "SELECT Id, Name, Number__c, Description FROM Account", batchSize: 2000)
        let clock = ContinuousClock()
        let elapsed = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run() }
            defer { group.cancelAll() }
            let started = clock.now
            let sync = try await manager.syncDown(target: target, soupName: "accounts")
            _ = await manager.waitForSync(id: sync.id)
            return clock.now - started
        }
        guard try store.count(in: "accounts") == records else {
            throw CLIError(message: "ingest: record count mismatch")
        }
        return BenchStats.seconds(elapsed)
    }

    /// Seconds for the store's own limit: the same records, pages of 2000, one transaction each.
    static func storeLimit(_ env: BenchEnvironment, pages: [[JSONObject]]) async throws -> Double {
        let plain = try UnfencedStore.open(directory: try env.freshDirectory(), logger: env.quietLogger())
        try plain.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        let clock = ContinuousClock()
        let started = clock.now
        for page in pages {
            try await plain.write { transaction in
                for record in page {
                    // What the sync down calls for each record.
                    try transaction.upsertClean(record, syncId: 1, into: "accounts", externalIdPath: "Id")
                }
            }
        }
        return BenchStats.seconds(clock.now - started)
    }

    /// Seconds for the raw loop: the soup's own table and indexes (made by the store's DDL) in a
    /// database of their own, the same pages, one transaction per page, the external-id lookup
    /// and the insert as prepared statements, with every JSON text and column value computed
    /// before the clock starts. What is left is SQLite's own work for this data.
    static func rawLoop(_ env: BenchEnvironment, pages: [[JSONObject]]) async throws -> Double {
        let directory = try env.freshDirectory()
        let unfenced = try UnfencedStore.open(directory: directory, logger: env.quietLogger())
        let store = unfenced.store
        let soup = try unfenced.registerSoup("accounts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        let ddl = try await store.read { try soup.schemaStatements(in: $0) }
        let now = WallClock.nowMillis()
        let rows = pages.map { page in
            page.map { record -> (id: String, insert: StatementArguments) in
                let clean = LocalFlags.clean(record, syncId: 1)
                return (
                    record["Id"]?.stringValue ?? "",
                    soup.insertArguments(
                        json: JSONValue.object(clean).jsonText(sortedKeys: false), record: clean, now: now)
                )
            }
        }
        let pool = try DatabasePool(path: directory.path + "/raw.sqlite")
        try await pool.write { db in
            for statement in ddl { try db.execute(sql: statement) }
        }
        let clock = ContinuousClock()
        let started = clock.now
        for page in rows {
            try await pool.write { db in
                let lookup = try db.makeStatement(sql: soup.lookupSQL(path: "Id"))
                let insert = try db.makeStatement(sql: soup.insertSQL)
                for row in page {
                    if try Int64.fetchOne(lookup, arguments: [row.id]) == nil {
                        try insert.execute(arguments: row.insert)
                    }
                }
            }
        }
        let elapsed = clock.now - started
        try pool.close()
        return BenchStats.seconds(elapsed)
    }

    /// Seconds for a plain GRDB loop: one table, INSERT … ON CONFLICT, same pages and transactions.
    static func grdbLoop(_ env: BenchEnvironment, pages: [[JSONObject]]) async throws -> Double {
        let path = try env.freshDirectory().path + "/plain.sqlite"
        let pool = try DatabasePool(path: path)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE t (id TEXT PRIMARY KEY, json TEXT NOT NULL)")
        }
        let texts = pages.map { page in
            page.map { ($0["Id"]?.stringValue ?? "", JSONValue.object($0).jsonString) }
        }
        let clock = ContinuousClock()
        let grdbStarted = clock.now
        for page in texts {
            try await pool.write { db in
                let statement = try db.cachedStatement(
                    sql:
                        "INSERT INTO t (id, json) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET json = excluded.json"
                )
                for (id, json) in page { try statement.execute(arguments: [id, json]) }
            }
        }
        let grdbTime = clock.now - grdbStarted
        try pool.close()
        return BenchStats.seconds(grdbTime)
    }
}
