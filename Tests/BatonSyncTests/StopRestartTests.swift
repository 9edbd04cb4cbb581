import BatonREST
import BatonServer
import BatonStore
import BatonSync
import SOQL
import Testing

@Suite("Stop and restart (Mobile SDK 7.1)", .timeLimit(.minutes(5)))
struct StopRestartTests {
    @Test("stop a sync down mid-way, then resume it from maxTimeStamp")
    func stopAndResume() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 10)
            try await f.client.adminSetFaults(["latencyMs": 150])
            let log = UpdateLog()
            let requestsBefore = f.server.server.requestCount
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 1), soupName: "accounts", name: "accounts",
                onUpdate: log.block)
            #expect(sync.status == .running)

            // Stop while the request for page 6 (sent as page 5 began saving) is in flight: the
            // seventh, after the one for the newest stamp.
            _ = await log.first { $0.progress == 50 }
            await f.server.server.waitForRequests(requestsBefore + 7)
            await f.manager.stop()
            #expect(await f.manager.isStopping())
            #expect(!(await f.manager.isStopped()))
            await f.manager.waitUntilStopped()
            #expect(await f.manager.isStopped())
            #expect(!(await f.manager.isStopping()))

            let stopped = try #require(await f.manager.getSyncStatus(id: sync.id))
            #expect(stopped.status == .stopped)
            #expect(stopped.progress == 50)
            let local = try f.local()
            #expect(local.count == 5)
            #expect(Set(local.keys) == Set(ids.prefix(5)))
            let fifth = try #require(try await f.client.get(type: "Account", id: ids[4]))
            #expect(
                stopped.maxTimeStamp
                    == DateTimeLiteral.milliseconds(fifth["LastModifiedDate"]?.stringValue ?? ""))

            // reSync while stopped fails with a typed error.
            await #expect {
                try await f.manager.reSync(id: sync.id)
            } throws: { ($0 as? SyncError)?.code == .notAcceptingSyncs }

            // restart(false) leaves it stopped; stop() again is at once stopped.
            try await f.manager.restart(restartStoppedSyncs: false)
            #expect(await f.manager.state == .acceptingSyncs)
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.status == .stopped)
            await f.manager.stop()
            #expect(await f.manager.isStopped())

            // restart(true) resumes after the last id saved and finishes.
            try await f.client.adminClearFaults()
            let restarted = try await f.manager.restart(restartStoppedSyncs: true, onUpdate: log.block)
            #expect(restarted.map(\.id) == [sync.id])
            let final = try #require(await f.manager.waitForSync(id: sync.id))
            #expect(final.status == .done)
            #expect(final.progress == 100)
            #expect(final.totalSize == 5)  // records 6…10, after the last id saved
            let all = try f.local()
            #expect(all.count == 10)
            #expect(try f.store.count(in: "accounts") == 10)
            let tenth = try #require(try await f.client.get(type: "Account", id: ids[9]))
            #expect(
                final.maxTimeStamp
                    == DateTimeLiteral.milliseconds(tenth["LastModifiedDate"]?.stringValue ?? ""))
        }
    }

    @Test("two queued sync downs stop: the running one mid-way, the queued one never started")
    func queuedSyncsStop() async throws {
        try await withSyncFixture { f in
            // Mobile Sync's one at a time: the second waits in the queue.
            await f.manager.setConcurrency(1)
            try await f.client.adminSeed(type: "Account", count: 8)
            try await f.client.adminSeed(type: "Contact", count: 4)
            try await f.client.adminSetFaults(["latencyMs": 100])
            let log = UpdateLog()
            let first = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 2), soupName: "accounts", name: "first",
                onUpdate: log.block)
            let second = try await f.manager.syncDown(
                target: try f.soqlTarget("SELECT Id, Name FROM Contact", batchSize: 2), soupName: "contacts",
                name: "second")
            #expect(second.status == .running)  // queued syncs report running
            _ = await log.first { $0.id == first.id && $0.progress == 50 }
            await f.manager.stop()
            await f.manager.waitUntilStopped()

            let firstState = try #require(await f.manager.getSyncStatus(id: first.id))
            let secondState = try #require(await f.manager.getSyncStatus(id: second.id))
            #expect(firstState.status == .stopped)
            #expect(firstState.progress == 50)
            #expect(secondState.status == .stopped)
            #expect(secondState.progress == 0)
            #expect(secondState.maxTimeStamp == -1)
            #expect(try SyncState.getSyncsWithStatus(f.store, .stopped).map(\.id) == [first.id, second.id])

            // restart(false), then the app reSyncs one by hand.
            try await f.client.adminClearFaults()
            try await f.manager.restart(restartStoppedSyncs: false)
            try await f.manager.reSync(name: "second")
            #expect(await f.manager.waitForSync(id: second.id)?.status == .done)
            #expect(try await f.manager.getSyncStatus(id: first.id)?.status == .stopped)
            #expect(try f.store.count(in: "contacts") == 4)

            // restart(true) finishes the other.
            let restarted = try await f.manager.restart(restartStoppedSyncs: true)
            #expect(restarted.map(\.id) == [first.id])
            #expect(await f.manager.waitForSync(id: first.id)?.status == .done)
            #expect(try f.store.count(in: "accounts") == 8)
        }
    }

    @Test("ties: 100 records on 3 time stamps, batch size 7, stopped and restarted again and again")
    func tiesAcrossStops() async throws {
        try await withSyncFixture { f in
            let ids = try await f.client.adminSeed(type: "Account", count: 100, timeStamps: 3)
            try await f.client.adminSetFaults(["latencyMs": 30])
            let sync = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 7), soupName: "accounts", name: "ties")
            var stops = 0
            while true {
                let log = UpdateLog()
                let subscription = await f.manager.updates()
                // Stop after the second saved page of each run.
                var pagesSeen = 0
                for await state in subscription where state.id == sync.id {
                    if state.status == .done { break }
                    if state.status == .running, state.progress > 0 { pagesSeen += 1 }
                    if pagesSeen == 2 { break }
                }
                _ = log
                let current = try #require(await f.manager.getSyncStatus(id: sync.id))
                if current.status == .done { break }
                await f.manager.stop()
                await f.manager.waitUntilStopped()
                stops += 1
                let stoppedState = try #require(await f.manager.getSyncStatus(id: sync.id))
                if stoppedState.status == .done { break }
                #expect(stoppedState.status == .stopped)
                try await f.manager.restart(restartStoppedSyncs: true)
                if stops >= 6 { break }
            }
            try await f.client.adminClearFaults()
            let final = try #require(await f.manager.waitForSync(id: sync.id))
            if final.status != .done {
                try await f.manager.reSync(id: sync.id)
                _ = await f.manager.waitForSync(id: sync.id)
            }
            #expect(try await f.manager.getSyncStatus(id: sync.id)?.status == .done)
            #expect(stops >= 2)
            let local = try f.local()
            #expect(Set(local.keys) == Set(ids))
            #expect(try f.store.count(in: "accounts") == 100)
        }
    }

    @Test("a listener's cancel stops only its sync, which stays resumable")
    func listenerCancel() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 6)
            try await f.client.adminSeed(type: "Contact", count: 3)
            let cancelling: SyncUpdateBlock = { state in
                state.progress >= 50 && state.status == .running ? .cancel : .proceed
            }
            let cancelled = try await f.manager.syncDown(
                target: try f.soqlTarget(batchSize: 1), soupName: "accounts", name: "cancelled",
                onUpdate: cancelling)
            let other = try await f.manager.syncDown(
                target: try f.soqlTarget("SELECT Id FROM Contact", batchSize: 1), soupName: "contacts",
                name: "other")
            let cancelledState = try #require(await f.manager.waitForSync(id: cancelled.id))
            #expect(cancelledState.status == .stopped)
            #expect(cancelledState.progress == 50)
            #expect(await f.manager.waitForSync(id: other.id)?.status == .done)
            #expect(await f.manager.state == .acceptingSyncs)
            try await f.manager.reSync(id: cancelled.id)
            #expect(await f.manager.waitForSync(id: cancelled.id)?.status == .done)
            #expect(try f.store.count(in: "accounts") == 6)
        }
    }

    @Test("crash recovery turns running syncs into stopped, and restart resumes them")
    func crashRecovery() async throws {
        try await withSyncFixture { f in
            try await f.client.adminSeed(type: "Account", count: 5)
            // A sync some dead process left running.
            let target = try f.soqlTarget(batchSize: 2)
            let created = try await f.manager.createSyncDown(
                target: target, soupName: "accounts", name: "orphan")
            let id = created.id
            try await f.unfenced.write { transaction in
                guard var row = try transaction.syncState(id: id) else { return }
                row.status = "running"
                try transaction.updateSyncState(row)
            }
            #expect(try await f.manager.recoverInterruptedSyncs(under: f.unfenced.access) == [created.id])
            #expect(try await f.manager.getSyncStatus(id: created.id)?.status == .stopped)
            try await f.manager.restart(restartStoppedSyncs: true)
            #expect(await f.manager.waitForSync(id: created.id)?.status == .done)
            #expect(try f.store.count(in: "accounts") == 5)
        }
    }

    @Test("run() twice is a typed error")
    func runTwice() async throws {
        try await withSyncFixture { f in
            // A finished sync proves the fixture's run() loop is up.
            let sync = try await f.manager.syncDown(target: try f.soqlTarget(), soupName: "accounts")
            #expect(await f.manager.waitForSync(id: sync.id)?.status == .done)
            await #expect { try await f.manager.run() } throws: {
                ($0 as? SyncError)?.code == .alreadyRunning
            }
        }
    }
}
