import BatonJSON
import BatonLocking
import Foundation
import GRDB
import SOQL

/// Runs queries and serves them page by page, as the API's query locators do: the first
/// request fixes the ordered list of matching ids (a cursor); each page then reads only its
/// records, so a page never holds more than `batchSize` records in memory. A parent's children
/// past the first ``childPageSize`` get a cursor of their own, which the same locator route pages.
final class QueryEngine: Sendable {
    struct Cursor: Sendable {
        var query: ResolvedQuery
        /// Row ids (SQLite's `rowid`, read from the covering time-stamp index), cheaper to list
        /// and keep than the 18-character record ids.
        var ids: [Int64]
        var batchSize: Int
        var lastUsed: UInt64
        /// `/services/data/vNN.0`, as the query was asked: its pages' URLs use it.
        var apiPath: String
        /// When it stops answering (`INVALID_QUERY_LOCATOR`), as Salesforce's locators expire.
        var expires: ContinuousClock.Instant
        /// Over one parent's children (a nested result's `nextRecordsUrl`) rather than a query.
        var isChildren = false
    }

    /// Query cursors kept at once; past it the least recently used goes.
    static let maxCursors = 64
    /// Children cursors kept at once, apart from the query cursors: a page of the largest batch
    /// (2,000 parents) may open one a parent, and its client follows them after reading the page,
    /// so neither they nor the query's cursor may push each other out.
    static let maxChildrenCursors = 8000

    let storage: RecordStorage
    let stats: ServerStats
    /// How long a locator answers, the last page included (Salesforce: 15 minutes).
    let locatorLifetime: Duration
    /// Children a parent's nested result holds before it pages, and the size of the further
    /// pages unless a request asks for another batch size (Salesforce: 200).
    let childPageSize: Int
    private let cursors = Locked(CursorTable())
    /// Where queries run (``offThePool(_:)``): a query waits here, not on the pool, for the
    /// database, which serializes them in memory and runs them side by side in a file.
    private let pages = DispatchQueue(label: "baton.server.query-pages", attributes: .concurrent)

    /// The cursors by locator, with the clocks that name and age them.
    private struct CursorTable {
        var entries: [String: Cursor] = [:]
        /// How many of `entries` are children cursors.
        var childrenCount = 0
        var clock: UInt64 = 0
        var next: UInt64 = 0

        mutating func remove(_ locator: String) {
            if entries.removeValue(forKey: locator)?.isChildren == true { childrenCount -= 1 }
        }
    }

    init(
        storage: RecordStorage, stats: ServerStats, locatorLifetime: Duration = .seconds(15 * 60),
        childPageSize: Int = 200
    ) {
        self.storage = storage
        self.stats = stats
        self.locatorLifetime = locatorLifetime
        self.childPageSize = max(1, childPageSize)
    }

    /// One page and what it holds, for counting once it is delivered.
    struct Page: Sendable {
        /// The JSON text of the answer.
        var body: [UInt8]
        var type: String
        var count: Int
    }

    /// Runs `work` (a query's start or one of its pages) on the engine's own threads and awaits
    /// it. Reading and writing a page is synchronous database work, milliseconds long for a
    /// page of 2,000, and an in-memory database serializes it: run on Swift's cooperative pool,
    /// pages asked for at once would each hold one of its few threads, waiting for the database
    /// in turn, and starve everything else on the pool, an in-process client parsing the pages
    /// already answered included. Off the pool, the pages are answered one after another and
    /// each is read by its client as soon as it is out, as from a server of its own.
    func offThePool<T: Sendable>(_ work: @escaping @Sendable (QueryEngine) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            pages.async { [self] in continuation.resume(with: Result { try work(self) }) }
        }
    }

    /// The first page of `soql`, asked under `apiPath` (`/services/data/vNN.0`).
    func start(soql: String, batchSize: Int, apiPath: String = "/services/data/v60.0") throws -> Page {
        let query: SOQLQuery
        do {
            query = try SOQLQuery(parsing: soql)
        } catch let error as SOQLError {
            throw SalesforceError.malformedQuery(error.description)
        }
        let schema = storage.schema
        let resolved = try schema.resolve(query)
        let (sql, arguments) = try QueryTranslator(schema: schema, wholeSeconds: storage.clock == .salesforce)
            .idQuery(for: resolved)
        if resolved.isCount {
            // `SELECT COUNT() FROM …`: the count in totalSize, no records, no locator.
            let count = try storage.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM (\(sql))", arguments: arguments) ?? 0
            }
            let body: JSONValue = ["totalSize": .int(Int64(count)), "done": true, "records": []]
            return Page(
                body: Array(body.jsonText(sortedKeys: false).utf8), type: resolved.object.name, count: 0)
        }
        if resolved.isAggregate { return try aggregate(resolved) }
        let ids = try storage.read { db in try Int64.fetchAll(db, sql: sql, arguments: arguments) }
        let cursor = Cursor(
            query: resolved, ids: ids, batchSize: batchSize, lastUsed: 0, apiPath: apiPath,
            expires: .now + locatorLifetime)
        let locator = remember(cursor)
        return try page(cursor, locator: locator, offset: 0)
    }

    /// `SELECT MAX(…), MIN(…) FROM …`: one `AggregateResult` row holding `expr0`, `expr1`… (null
    /// where no record matched), as the API answers an aggregate query without GROUP BY; no
    /// records served, no locator. LIMIT 0 or an OFFSET past the row leaves it out.
    private func aggregate(_ resolved: ResolvedQuery) throws -> Page {
        let translator = QueryTranslator(schema: storage.schema, wholeSeconds: storage.clock == .salesforce)
        let (sql, arguments) = try translator.aggregateQuery(for: resolved)
        // Time stamps are kept as milliseconds and answered as date-times.
        let stamps = try resolved.query.fields.map { item -> Bool in
            guard case .aggregate(_, let path) = item else { return false }
            return QueryTranslator.isTimeStamp(try translator.column(path, on: resolved.object).field.name)
        }
        let query = resolved.query
        let row =
            query.limit == 0 || (query.offset ?? 0) > 0
            ? nil : try storage.read { db in try Row.fetchOne(db, sql: sql, arguments: arguments) }
        var out = JSONTextWriter(capacity: 256)
        out.raw("{\"totalSize\":")
        out.int(row == nil ? 0 : 1)
        out.raw(",\"done\":true,\"records\":[")
        if let row {
            out.raw("{\"attributes\":{\"type\":\"AggregateResult\"}")
            for (index, isStamp) in stamps.enumerated() {
                out.raw(",")
                out.string("expr\(index)")
                out.raw(":")
                let value: DatabaseValue = row[index]
                switch value.storage {
                case .int64(let int) where isStamp: out.string(DateTimeLiteral.format(milliseconds: int))
                case .int64(let int): out.int(int)
                case .double(let double): out.value(.double(double), sortedKeys: false)
                case .string(let text): out.string(text)
                case .null, .blob: out.raw("null")
                }
            }
            out.raw("}")
        }
        out.raw("]}")
        return Page(body: out.bytes, type: resolved.object.name, count: 0)
    }

    /// The page at `locator` (`<cursor>-<offset>`, from a `nextRecordsUrl`), of `batchSize`
    /// records when given (else the size the query started with; for a parent's children,
    /// ``childPageSize``).
    func next(locator: String, batchSize: Int? = nil) throws -> Page {
        let parts = locator.split(separator: "-", maxSplits: 1).map(String.init)
        guard parts.count == 2, let offset = Int(parts[1]), offset >= 0 else {
            throw SalesforceError(status: 400, "INVALID_QUERY_LOCATOR", "invalid query locator")
        }
        let cursor = cursors.withLock { state -> Cursor? in
            state.clock += 1
            state.entries[parts[0]]?.lastUsed = state.clock
            return state.entries[parts[0]]
        }
        guard var cursor, offset <= cursor.ids.count else {
            throw SalesforceError(status: 400, "INVALID_QUERY_LOCATOR", "invalid query locator")
        }
        guard ContinuousClock.now < cursor.expires else {
            cursors.withLock { $0.remove(parts[0]) }
            throw SalesforceError(status: 400, "INVALID_QUERY_LOCATOR", "invalid query locator (expired)")
        }
        if let batchSize { cursor.batchSize = batchSize }
        return try page(cursor, locator: parts[0], offset: offset)
    }

    private func remember(_ cursor: Cursor) -> String {
        cursors.withLock { state in
            state.next += 1
            state.clock += 1
            let locator = "01g" + String(state.next, radix: 36)
            var entry = cursor
            entry.lastUsed = state.clock
            state.entries[locator] = entry
            if entry.isChildren { state.childrenCount += 1 }
            // Each kind has its own bound: a query's children never push out its own cursor.
            let (count, limit) =
                entry.isChildren
                ? (state.childrenCount, Self.maxChildrenCursors)
                : (state.entries.count - state.childrenCount, Self.maxCursors)
            if count > limit,
                let oldest = state.entries.lazy.filter({ $0.value.isChildren == entry.isChildren })
                    .min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
            {
                state.remove(oldest)
            }
            return locator
        }
    }

    /// Opens a cursor over one parent's children (`rowIds`, every child `query` matches, in
    /// order) whose first ``childPageSize`` the parent's nested result holds; returns the nested
    /// result's `nextRecordsUrl`, under `apiPath`.
    private func openChildren(_ query: ResolvedQuery, rowIds: [Int64], apiPath: String) -> String {
        let cursor = Cursor(
            query: query, ids: rowIds, batchSize: childPageSize, lastUsed: 0, apiPath: apiPath,
            expires: .now + locatorLifetime, isChildren: true)
        return "\(apiPath)/query/\(remember(cursor))-\(min(childPageSize, rowIds.count))"
    }

    private func page(_ cursor: Cursor, locator: String, offset: Int) throws -> Page {
        let end = min(cursor.ids.count, offset + cursor.batchSize)
        let pageIds = Array(cursor.ids[offset..<end])
        let type = cursor.query.object.name
        let done = end >= cursor.ids.count
        var out = JSONTextWriter(capacity: 256 + pageIds.count * 512)
        out.raw("{\"totalSize\":")
        out.int(Int64(cursor.ids.count))
        out.raw(done ? ",\"done\":true" : ",\"done\":false")
        // The locator stays until it expires, the last page included: a client that lost the
        // answer to a page asks for it again.
        if !done {
            out.raw(",\"nextRecordsUrl\":")
            out.string("\(cursor.apiPath)/query/\(locator)-\(end)")
        }
        out.raw(",\"records\":[")
        // A record deleted since the query started is skipped, as the API does.
        let count =
            if var writer = RecordTextWriter(cursor.query, apiPath: cursor.apiPath) {
                try storage.read { db in
                    try Self.writeRecords(db, type: type, rowIds: pageIds, with: &writer, to: &out)
                }
            } else {
                try storage.read { db in
                    try projectRecords(db, cursor: cursor, rowIds: pageIds, to: &out)
                }
            }
        out.raw("]}")
        return Page(body: out.bytes, type: type, count: count)
    }

    /// Writes the records at `rowIds` (those still there, in that order) straight from their
    /// stored text; returns how many.
    private static func writeRecords(
        _ db: Database, type: String, rowIds: [Int64], with writer: inout RecordTextWriter,
        to out: inout JSONTextWriter
    ) throws -> Int {
        guard !rowIds.isEmpty else { return 0 }
        var position: [Int64: Int] = [:]
        position.reserveCapacity(rowIds.count)
        for (index, id) in rowIds.enumerated() { position[id] = index }
        // Rows come in the table's order. While that is the page's order (records listed by time
        // stamp in the order they were written) each is written straight out; one that comes
        // early waits in its slot until every record before it is out.
        var slots = [[UInt8]?](repeating: nil, count: rowIds.count)
        var next = 0
        var count = 0
        func append(_ record: [UInt8]) {
            if count > 0 { out.raw(",") }
            out.raw(record)
            count += 1
        }
        let rows = try Row.fetchCursor(
            db, sql: Self.pageSQL(columns: RecordTextWriter.columns, count: rowIds.count),
            arguments: StatementArguments([type] + rowIds.map { $0 as (any DatabaseValueConvertible)? }))
        while let row = try rows.next() {
            guard let index = position[row[0]] else { continue }
            guard index == next else {
                var record = JSONTextWriter(capacity: 512)
                try writer.write(row, to: &record)
                slots[index] = record.bytes
                continue
            }
            if count > 0 { out.raw(",") }
            try writer.write(row, to: &out)
            count += 1
            next += 1
            while next < rowIds.count, let record = slots[next] {
                append(record)
                slots[next] = nil
                next += 1
            }
        }
        // The rest waited behind a record deleted since the query started (skipped, as the API
        // does): out in their order.
        for case let record? in slots[next...] { append(record) }
        return count
    }

    /// Writes the records at `rowIds` through ``Projector`` (a query that reads parents or
    /// children); returns how many.
    private func projectRecords(
        _ db: Database, cursor: Cursor, rowIds: [Int64], to out: inout JSONTextWriter
    ) throws -> Int {
        let rows = try Self.rows(db, type: cursor.query.object.name, rowIds: rowIds)
        let projector = Projector(
            schema: storage.schema, apiPath: cursor.apiPath, wholeSeconds: storage.clock == .salesforce)
        let apiPath = cursor.apiPath
        let related = RelatedRecords(
            db: db, projector: projector,
            childPaging: RelatedRecords.ChildPaging(size: childPageSize) { [self] query, rowIds in
                openChildren(query, rowIds: rowIds, apiPath: apiPath)
            })
        var count = 0
        for id in rowIds {
            guard let row = rows[id] else { continue }
            let record = try projector.project(
                try RecordStorage.fullRecord(row), cursor.query, related: related)
            if count > 0 { out.raw(",") }
            out.value(.object(record), sortedKeys: false)
            count += 1
        }
        return count
    }

    /// The rows of one type (the first argument) among `count` row ids (the others). The type is
    /// `+type`, so that SQLite looks each row up by its id: left to itself, it walks the type's
    /// time-stamp index through every record of the type for each page, a cost that grows with
    /// the table (a 100,000-record query spent 40% of its time there).
    static func pageSQL(columns: String, count: Int) -> String {
        let placeholders = Array(repeating: "?", count: count).joined(separator: ",")
        return "SELECT \(columns) FROM records WHERE +type = ? AND rowid IN (\(placeholders))"
    }

    /// The rows of `type` with these row ids, by row id.
    static func rows(_ db: Database, type: String, rowIds: [Int64]) throws -> [Int64: Row] {
        guard !rowIds.isEmpty else { return [:] }
        var byId: [Int64: Row] = [:]
        for row in try Row.fetchAll(
            db, sql: pageSQL(columns: "rowid AS _rowid, *", count: rowIds.count),
            arguments: StatementArguments([type] + rowIds.map { $0 as (any DatabaseValueConvertible)? }))
        {
            byId[row["_rowid"]] = row
        }
        return byId
    }
}
