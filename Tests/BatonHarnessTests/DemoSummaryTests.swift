import BatonJSON
import BatonStore
import Testing

@testable import BatonHarness

/// The demo's checks on crafted observations: a good day passes, each broken part fails its
/// own check and only that one.
@Suite("demo summary checks")
struct DemoSummaryTests {
    /// A day that went right: 100 records in pages of 20; the host stopped after 40 and the
    /// extension fetched the page in flight again; 10 changed on the server, 2 more by a
    /// transaction that committed late, 4 deleted (2 of them also changed), one local edit synced
    /// up.
    func goodDay() -> DemoSummary.Observation {
        let ids = (1...100).map { String(format: "001%05d", $0) }
        let deleted = Array(ids[0..<4])
        let touched = Array(ids[2..<12])
        let records: [JSONObject] = ids.dropFirst(4).map { id in
            ["Id": .string(id), "LastModifiedDate": .string("stamp-\(id)"), "Name": .string("n")]
        }
        var server = records
        server[0]["Name"] = "Edited in the demo"
        server[0]["LastModifiedDate"] = "newer"
        let t = 1_000.0
        return DemoSummary.Observation(
            records: 100, batchSize: 20,
            // The host's 40, the extension's 60 + the 20 of the page in flight, and the ghost
            // check's 100 ids.
            servedBeforeReturn: 40 + 80 + 100,
            // reSync: the 8 changed and not deleted, the 2 committed late, plus the ghost check's
            // 96 ids.
            servedAfterReturn: 40 + 80 + 100 + 10 + 96,
            touched: touched, committedLate: [ids[20], ids[21]], deleted: deleted, editedId: ids[4],
            signals: [("ext", "foreground", t - 1, 0), ("host", "background", t, 0)],
            serverRecords: server, local: records,
            descriptions: [
                ["Id": "Account", "keyPrefix": "001", "fields": [["name": "Id"]]],
                [
                    "Id": "Account-Compact",
                    "sections": [["layoutRows": [["layoutItems": [["label": "Name"]]]]]],
                ],
            ],
            hostLog: [
                ["event": "stopped", "stopMs": 4.5],
                ["event": "lease.released", "reason": "background", "t": .double(t + 12)],
            ],
            extLog: [
                ["event": "lease.acquired", "t": .double(t + 15)],
                ["event": "sync", "status": "running", "progress": 50, "t": .double(t + 60)],
            ],
            history: [
                LeaseRecord(
                    epoch: 1, name: "host", pid: 1, acquired: 1, released: 2, releaseKind: "background"),
                LeaseRecord(
                    epoch: 2, name: "ext", pid: 2, acquired: 3, released: 4, releaseKind: "background"),
                LeaseRecord(
                    epoch: 3, name: "host", pid: 1, acquired: 5, released: 6, releaseKind: "background"),
                LeaseRecord(
                    epoch: 4, name: "demo", pid: 3, acquired: 7, released: 8, releaseKind: "released"),
            ],
            commits: [
                CommitRecord(sequence: 1, epoch: 1, fencedEpoch: 1, pid: 1, at: 1),
                CommitRecord(sequence: 2, epoch: 2, fencedEpoch: 2, pid: 2, at: 3),
                CommitRecord(sequence: 3, epoch: 4, fencedEpoch: 4, pid: 3, at: 7),
            ],
            integrity: "ok", durationMs: 900)
    }

    func failed(_ observation: DemoSummary.Observation) -> [String] {
        DemoSummary.evaluate(observation).checks.filter { !$0.passed }.map(\.name)
    }

    @Test("a good day passes every check and reports its figures")
    func passes() {
        let summary = DemoSummary.evaluate(goodDay())
        #expect(summary.passed, "\(summary.lines.joined(separator: "\n"))")
        #expect(summary.checks.count == 10)
        #expect(summary.figures.stopLatencyMs == 4.5)
        #expect(summary.figures.releaseLatencyMs == 12)
        #expect(summary.figures.handoverLatencyMs == 15)
        #expect(summary.lines.last == "all 10 checks passed")
    }

    @Test("each broken part fails its own check")
    func failures() {
        var missing = goodDay()
        missing.local.removeLast()
        #expect(failed(missing) == ["records match"])

        // An edit in the same second as the copy's stamp: the stamps agree, the fields do not.
        var sameSecond = goodDay()
        sameSecond.serverRecords[7]["Name"] = "edited in the same second"
        #expect(failed(sameSecond) == ["records match"])

        var refetched = goodDay()
        refetched.servedBeforeReturn += 5
        refetched.servedAfterReturn += 5
        #expect(failed(refetched) == ["refetch overhead"])

        var fullResync = goodDay()
        fullResync.servedAfterReturn += 50
        #expect(failed(fullResync) == ["reSync fetched only changes"])

        var ghost = goodDay()
        ghost.local.append(["Id": .string(ghost.deleted[0]), "LastModifiedDate": "old"])
        #expect(failed(ghost).contains("ghosts cleaned"))

        var notSent = goodDay()
        notSent.serverRecords[0]["Name"] = "n"
        #expect(failed(notSent) == ["local edit synced up"])

        var slowStop = goodDay()
        slowStop.hostLog[1]["t"] = .double(1_000 + 2_500)
        #expect(failed(slowStop) == ["stop latency"])

        var noHandOver = goodDay()
        noHandOver.extLog = [["event": "lease.acquired", "t": 1_015.0]]
        #expect(failed(noHandOver) == ["hand-over latency"])

        var overlap = goodDay()
        overlap.history[1].acquired = 1
        overlap.history[0].released = 5
        #expect(failed(overlap) == ["lease history"])

        // A process that committed outside the lease at start-up, as a soup registration did.
        var startUpWrite = goodDay()
        startUpWrite.commits.insert(
            CommitRecord(sequence: 0, epoch: 0, fencedEpoch: nil, pid: 2, at: 0), at: 0)
        #expect(failed(startUpWrite) == ["lease history"])
        var foreignWrite = goodDay()
        foreignWrite.commits.append(CommitRecord(sequence: 4, epoch: 4, fencedEpoch: nil, pid: 2, at: 7))
        #expect(failed(foreignWrite) == ["lease history"])

        var noLayout = goodDay()
        noLayout.descriptions.removeLast()
        #expect(failed(noLayout) == ["describe and layout synced"])

        var corrupt = goodDay()
        corrupt.integrity = "row 3 missing from index"
        #expect(failed(corrupt) == ["integrity check"])
        #expect(DemoSummary.evaluate(corrupt).lines.last == "1 of 10 checks FAILED")
    }
}
