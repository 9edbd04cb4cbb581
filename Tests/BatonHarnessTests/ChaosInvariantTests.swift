import BatonCoordinator
import BatonJSON
import BatonStore
import Testing

@testable import BatonHarness
@testable import BatonSync

/// Each invariant the chaos run checks, fed with crafted histories, logs and store states: it
/// passes on a sound one and names the violation on a broken one.
@Suite("chaos invariants")
struct ChaosInvariantTests {
    let history = [
        LeaseRecord(
            epoch: 1, name: "host", pid: 100, acquired: 1_000, released: 2_000, releaseKind: "background"),
        LeaseRecord(epoch: 2, name: "ext1", pid: 200, acquired: 2_100, released: nil, releaseKind: nil),
    ]
    let commits = [
        CommitRecord(sequence: 1, epoch: 1, fencedEpoch: 1, pid: 100, at: 1_500),
        CommitRecord(sequence: 2, epoch: 2, fencedEpoch: 2, pid: 200, at: 2_500),
    ]

    func violation(_ body: () throws -> Void) -> ChaosViolation? {
        do {
            try body()
            return nil
        } catch {
            return error as? ChaosViolation
        }
    }

    @Test("a sound history, commits by their epoch's holder and an intact file pass")
    func soundStore() throws {
        try ChaosRun.checkStore(round: 1, history: history, commits: commits, integrity: "ok")
    }

    @Test("overlapping lease intervals are a lease history violation")
    func overlap() {
        var overlapping = history
        overlapping[1].acquired = 1_900
        let found = violation {
            try ChaosRun.checkStore(round: 4, history: overlapping, commits: [], integrity: "ok")
        }
        #expect(found?.invariant == "lease history")
        #expect(found?.round == 4)
    }

    @Test("epochs that do not increase are a lease history violation")
    func epochsGoBack() {
        var backwards = history
        backwards[1].epoch = 1
        #expect(
            violation { try ChaosRun.checkStore(round: 1, history: backwards, commits: [], integrity: "ok") }?
                .invariant == "lease history")
    }

    @Test("a commit after its holder released, by another pid, or without the lease is caught")
    func commitsOutsideTheLease() {
        let late = CommitRecord(sequence: 3, epoch: 1, fencedEpoch: 1, pid: 100, at: 2_050)
        let stranger = CommitRecord(sequence: 3, epoch: 2, fencedEpoch: 2, pid: 999, at: 2_600)
        let unleased = CommitRecord(sequence: 3, epoch: 0, fencedEpoch: nil, pid: 300, at: 2_700)
        let stale = CommitRecord(sequence: 3, epoch: 2, fencedEpoch: 1, pid: 200, at: 2_600)
        for commit in [late, stranger, unleased, stale] {
            let found = violation {
                try ChaosRun.checkStore(
                    round: 2, history: history, commits: commits + [commit], integrity: "ok")
            }
            #expect(found?.invariant == "commits under the lease", "\(commit)")
        }
    }

    @Test("an integrity_check other than ok is a violation that quotes it")
    func integrity() {
        let found = violation {
            try ChaosRun.checkStore(
                round: 1, history: history, commits: commits, integrity: "*** in database main *** Page 7")
        }
        #expect(found?.invariant == "integrity_check")
        #expect(found?.detail.contains("Page 7") == true)
    }

    @Test("a takeover is allowed only from a stopped or hung holder")
    func takeovers() {
        let events: [JSONObject] = [
            ["event": "lease.acquired", "epoch": 3],
            ["event": "lease.takeover", "from": 3, "holder": "host", "holderState": "stopped"],
            ["event": "lease.takeover", "from": 5, "holder": "ext1", "holderState": "hung"],
            ["event": "lease.takeover", "from": 7, "holder": "ext2", "holderState": "running"],
        ]
        let found = ChaosRun.takeovers(in: events)
        #expect(found.count == 3)
        #expect(found.filter(\.holderWasFrozen).map(\.epoch) == [3, 5])
        #expect(found.last == .init(epoch: 7, holder: "ext2", holderState: "running"))
        #expect(
            ChaosRun.takeovers(in: [["event": "lease.takeover", "from": 1]]).first?.holderWasFrozen == false)
    }

    @Test("a participant that ended by itself is reported with how it ended and its last output")
    func crash() {
        let found = ChaosRun.crash(
            round: 9, name: "ext2", pid: 4242, termination: .init(status: 6, signaled: true),
            output: "starting\nwarning: x\nFatal error: y\nTrace z\n")
        #expect(found.invariant == "no participant crashed")
        #expect(found.round == 9)
        #expect(found.detail.contains("ext2 (pid 4242) ended with killed by signal 6 (SIGABRT)"))
        #expect(found.detail.hasSuffix("warning: x | Fatal error: y | Trace z"))
    }

    // MARK: - Settled

    func status(phase: ParticipantPhase, pid: Int32 = 100, epoch: Int64? = 4) -> ParticipantStatus {
        ParticipantStatus(
            role: .host, name: "host", priority: 100, pid: pid, lifecycle: .foreground, phase: phase,
            epoch: epoch,
            managerState: "running", updated: 0)
    }

    let settledLog: [JSONObject] = [
        ["event": "lease.acquired", "epoch": 4],
        ["event": "sync", "name": "accounts", "status": "running"],
        ["event": "sync", "name": "accounts", "status": "done"],
        ["event": "sync", "name": "edits", "status": "done"],
        ["event": "ghosts.cleaned", "name": "accounts"],
        ["event": "sync", "name": "trees", "status": "done"],
        ["event": "ghosts.cleaned", "name": "trees"],
    ]

    @Test("settled: the writer under its epoch ran every sync to done and cleaned ghosts after the sync down")
    func settled() {
        #expect(ChaosRun.hasSettled(status: status(phase: .writer), pid: 100, events: settledLog))
        // Not the writer, another process under the name, or another epoch: not settled.
        #expect(!ChaosRun.hasSettled(status: status(phase: .waitingForLease), pid: 100, events: settledLog))
        #expect(!ChaosRun.hasSettled(status: status(phase: .writer), pid: 101, events: settledLog))
        #expect(!ChaosRun.hasSettled(status: status(phase: .writer, epoch: 5), pid: 100, events: settledLog))
        #expect(!ChaosRun.hasSettled(status: nil, pid: 100, events: settledLog))
        // Ghosts cleaned before the last sync down ended: not settled.
        var early = settledLog
        early.swapAt(2, 4)
        #expect(!ChaosRun.hasSettled(status: status(phase: .writer), pid: 100, events: early))
        // The other sync down's ghosts not cleaned after its run: not settled.
        #expect(
            !ChaosRun.hasSettled(
                status: status(phase: .writer), pid: 100, events: Array(settledLog.dropLast())))
        // A sync whose last word is not done: not settled.
        let failed = settledLog + [["event": "sync", "name": "edits", "status": "failed"]]
        #expect(!ChaosRun.hasSettled(status: status(phase: .writer), pid: 100, events: failed))
    }

    // MARK: - Converged

    func sync(_ name: String, _ status: SyncStatus) -> SyncState {
        var state = SyncState(
            name: name, type: .syncDown, target: [:], options: SyncOptions(), soupName: "accounts")
        state.status = status
        return state
    }

    func entry(_ id: Int64, _ record: JSONObject) -> SoupEntry {
        SoupEntry(entryId: id, record: record, lastModified: 0)
    }

    let server: [JSONObject] = [
        ["Id": "001", "LastModifiedDate": "2026-01-01T00:00:00.000+0000", "Name": "chaos-1"],
        ["Id": "002", "LastModifiedDate": "2026-01-02T00:00:00.000+0000", "Name": "b"],
    ]

    func converged(
        syncs: [SyncState]? = nil, server: [JSONObject]? = nil, local: [SoupEntry]? = nil
    ) -> ChaosViolation? {
        violation {
            try ChaosRun.checkConverged(
                round: 50, syncs: syncs ?? [sync("accounts", .done), sync("edits", .done)],
                serverRecords: server ?? self.server,
                local: local ?? self.server.enumerated().map { entry(Int64($0.offset + 1), $0.element) },
                edits: [LocalEdit(token: "chaos-1", entryId: 1, serverId: "001", externalId: nil)])
        }
    }

    @Test("the store holding exactly the server's records, all clean, every sync done, converges")
    func convergedPasses() {
        #expect(converged() == nil)
    }

    @Test("each way of not converging is named")
    func notConverged() {
        #expect(
            converged(syncs: [sync("accounts", .done), sync("edits", .failed)])?.invariant
                == "every sync done")

        var dirty = server
        dirty[1][LocalFlags.local] = true
        dirty[1][LocalFlags.locallyUpdated] = true
        #expect(
            converged(local: dirty.enumerated().map { entry(Int64($0.offset + 1), $0.element) })?.invariant
                == "no local change left behind")

        #expect(converged(local: [entry(1, server[0])])?.invariant == "store = server")

        var stale = server
        stale[1]["LastModifiedDate"] = "2025-12-31T00:00:00.000+0000"
        #expect(
            converged(local: stale.enumerated().map { entry(Int64($0.offset + 1), $0.element) })?.detail
                .contains(
                    "1 with another LastModifiedDate") == true)

        let twice = server + [["Id": "003", "LastModifiedDate": "x", "Name": "chaos-1"]]
        #expect(
            converged(
                server: twice, local: twice.enumerated().map { entry(Int64($0.offset + 1), $0.element) })?
                .invariant == "no duplicates from sync up")

        var renamed = server
        renamed[0]["Name"] = "someone else"
        #expect(
            converged(
                server: renamed, local: renamed.enumerated().map { entry(Int64($0.offset + 1), $0.element) })?
                .invariant == "no local edit lost")
    }

    @Test("the parent-children sync converges when its soups hold the server's accounts and contacts")
    func treesConverge() {
        let accounts: [JSONObject] = [
            ["Id": "001", "LastModifiedDate": "2026-01-01T00:00:00.000+0000"],
            ["Id": "002", "LastModifiedDate": "2026-01-02T00:00:00.000+0000"],
        ]
        let contacts: [JSONObject] = [
            ["Id": "003A", "AccountId": "001"], ["Id": "003B", "AccountId": "001"],
        ]
        func check(parents: [JSONObject], children: [JSONObject]) -> ChaosViolation? {
            violation {
                try ChaosRun.checkTrees(
                    round: 7, serverAccounts: accounts, serverContacts: contacts, parents: parents,
                    children: children)
            }
        }
        #expect(check(parents: accounts, children: contacts) == nil)
        #expect(
            check(parents: [accounts[0]], children: contacts)?.invariant == "store = server (parent-children)"
        )
        var moved = contacts
        moved[1]["AccountId"] = "002"
        #expect(check(parents: accounts, children: moved)?.detail.contains("contacts differ") == true)
        var stale = accounts
        stale[0]["LastModifiedDate"] = "2025-01-01T00:00:00.000+0000"
        #expect(check(parents: stale, children: contacts)?.detail.contains("accounts differ") == true)
    }

    @Test(
        "syncs at once are read from a log: from running with a size to the next status, none across a new lease term"
    )
    func syncsAtOnce() {
        func sync(_ id: Int64, _ status: SyncStatus, size: Int64 = 10) -> JSONObject {
            ["event": "sync", "id": .int(id), "status": .string(status.rawValue), "totalSize": .int(size)]
        }
        let lease: JSONObject = ["event": "lease.acquired"]
        // 1 and 2 overlap; 3 starts after 1 ended: two at once.
        #expect(
            ChaosRun.syncsAtOnce([
                lease, sync(1, .running), sync(2, .running), sync(1, .done), sync(3, .running),
                sync(2, .stopped),
            ]) == 2)
        // A killed writer's syncs never ended in its log: the next term starts from none.
        #expect(
            ChaosRun.syncsAtOnce([
                lease, sync(1, .running), ["event": "lease.takeover"], sync(2, .running), sync(2, .done),
                sync(3, .running),
            ]) == 1)
        #expect(ChaosRun.syncsAtOnce([lease, sync(1, .running), sync(1, .failed), sync(1, .running)]) == 1)
        // Queued syncs report running with no size yet: they do not run.
        #expect(
            ChaosRun.syncsAtOnce([
                lease, sync(1, .running, size: -1), sync(2, .running, size: -1), sync(1, .running),
                sync(1, .done), sync(2, .running),
            ]) == 1)
    }
}
