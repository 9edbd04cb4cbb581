import BatonCoordinator
import BatonStore
import Testing

@Suite("Lease audit")
struct LeaseAuditTests {
    @Test("clean, overlapping, unreleased and non-increasing histories")
    func audit() {
        func record(_ epoch: Int64, _ acquired: Int64, _ released: Int64?) -> LeaseRecord {
            LeaseRecord(
                epoch: epoch, name: "p", pid: 1, acquired: acquired, released: released, releaseKind: nil)
        }
        #expect(LeaseAudit.check([record(1, 0, 10), record(2, 10, 20), record(3, 25, nil)]).isEmpty)
        #expect(LeaseAudit.check([record(1, 0, 15), record(2, 10, 20)]).count == 1)
        #expect(LeaseAudit.check([record(1, 0, nil), record(2, 10, 20)]).count == 1)
        #expect(LeaseAudit.check([record(2, 0, 5), record(2, 10, 20)]).count == 1)
    }

    @Test("commits by the holder pass; a stranger, a stale fence, a late or out-of-order commit fail")
    func commitAudit() {
        let history = [
            LeaseRecord(
                epoch: 1, name: "host", pid: 10, acquired: 100, released: 200, releaseKind: "released"),
            LeaseRecord(epoch: 2, name: "ext", pid: 20, acquired: 210, released: nil, releaseKind: nil),
        ]
        func commit(_ sequence: Int64, epoch: Int64, fenced: Int64?, pid: Int32, at: Int64) -> CommitRecord {
            CommitRecord(sequence: sequence, epoch: epoch, fencedEpoch: fenced, pid: pid, at: at)
        }
        let clean = [
            commit(1, epoch: 0, fenced: nil, pid: 5, at: 50),
            commit(2, epoch: 1, fenced: nil, pid: 10, at: 100),
            commit(3, epoch: 1, fenced: 1, pid: 10, at: 150),
            commit(4, epoch: 2, fenced: 2, pid: 20, at: 300),
        ]
        let report = LeaseAudit.checkCommits(clean, history: history, strict: false)
        #expect(report.violations.isEmpty)
        #expect(report.unleased == 1)
        #expect(report.checked == 4)
        #expect(LeaseAudit.checkCommits(clean, history: history, strict: true).violations.count == 1)

        let stranger = commit(5, epoch: 2, fenced: 2, pid: 99, at: 310)
        let stale = commit(5, epoch: 2, fenced: 1, pid: 20, at: 310)
        let late = commit(5, epoch: 1, fenced: 1, pid: 10, at: 250)
        for bad in [stranger, stale, late] {
            let found = LeaseAudit.checkCommits(clean + [bad], history: history, strict: false).violations
            #expect(found.count >= 1, "\(bad)")
        }
        let afterRelease = commit(3, epoch: 1, fenced: 1, pid: 10, at: 205)
        #expect(
            LeaseAudit.checkCommits(Array(clean.prefix(2)) + [afterRelease], history: history, strict: false)
                .violations.map(\.problem).contains { $0.contains("after the lease ended") })
    }
}
