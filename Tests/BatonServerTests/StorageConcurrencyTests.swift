import BatonLocking
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
}
