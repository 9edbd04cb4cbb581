import BatonLocking
import BatonREST
import Dispatch
import Foundation
import GRDB
import Testing

@testable import BatonServer

@Suite("The server's storage: a long read holds up no other request")
struct StorageConcurrencyTests {
    /// A read transaction kept open on one thread (a slow query) while this thread writes a
    /// record and reads it back. On a queue the write would wait for the read to end, which
    /// waits for the write: the semaphore's timeout would end it and the test would fail.
    @Test("with a file, a write and another read complete while a read is open")
    func readDoesNotBlock() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("baton-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer {
            // Cleanup only: a leftover temporary directory changes no result.
            try? FileManager.default.removeItem(at: directory)
        }
        let storage = try RecordStorage(path: directory.appendingPathComponent("server.sqlite").path)
        let opened = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let slowReadResult = Locked<Result<(count: Int, releasedInTime: Bool), any Error>?>(nil)
        Thread.detachNewThread {
            do {
                let seen = try storage.read { db -> (count: Int, releasedInTime: Bool) in
                    let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM records") ?? -1
                    opened.signal()
                    let released = released.wait(timeout: .now() + 30) == .success
                    return (count, released)
                }
                slowReadResult.withLock { $0 = .success(seen) }
            } catch {
                slowReadResult.withLock { $0 = .failure(error) }
            }
            finished.signal()
        }
        #expect(opened.wait(timeout: .now() + 30) == .success)
        try storage.write { db in
            try db.execute(
                sql:
                    "INSERT INTO records (id, type, created, lastModified, systemModstamp, fields) VALUES ('001000000000001AAA', 'Account', 1, 1, 1, '{}')"
            )
        }
        let countNow = try storage.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM records") }
        released.signal()
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(countNow == 1)
        let seen = try #require(slowReadResult.withLock { $0 }).get()
        // The open read kept its snapshot, taken before the write, and was released by this
        // thread: nothing here waited for it.
        #expect(seen.count == 0)
        #expect(seen.releasedInTime)
    }

    /// Queries asked while the in-memory database is held by a write (a slow one, on a thread of
    /// this test's own): each waits for the database. More of them than Swift's cooperative pool
    /// has threads, and a task on the pool must still run before the write is let go. Were the
    /// waiting queries holding the pool's threads, it could not: the write would end only at
    /// its own deadline, not released in time, and the test would fail.
    @Test("queries waiting for the database hold no thread of the cooperative pool")
    func queriesWaitOffThePool() async throws {
        let running = try await ReferenceServer.start(.init(token: "t"))
        let client = RESTClient(baseURL: running.url, token: "t")
        do {
            try await client.adminSeed(type: "Account", count: 10, ageSeconds: 60)
            let release = DispatchSemaphore(value: 0)
            let writeEnded = Locked<Result<Bool, any Error>?>(nil)
            await withCheckedContinuation { (holding: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    let result = Result {
                        try running.server.storage.write { _ -> Bool in
                            holding.resume()
                            return release.wait(timeout: .now() + 30) == .success
                        }
                    }
                    writeEnded.withLock { $0 = result }
                }
            }
            let count = ProcessInfo.processInfo.activeProcessorCount + 2
            let asked = running.server.stats.requests
            let queries = (0..<count).map { _ in
                Task {
                    try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 200).records.count
                }
            }
            // Every query is at the server (counted as it arrives) before the pool's task is asked for.
            await running.server.stats.wait(for: .requests, asked + count)
            #expect(await Task.detached { 42 }.value == 42)
            release.signal()
            for query in queries { #expect(try await query.value == 10) }
            let releasedInTime = try #require(writeEnded.withLock { $0 }).get()
            #expect(releasedInTime, "the pool's task ran only once the write gave up waiting")
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
    }
}
