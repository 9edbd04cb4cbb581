import BatonLocking
import BatonStore
import BatonTestSupport
import Dispatch
import Foundation
import Testing

@testable import BatonCoordinator

@Suite("Status files written off the event loop")
struct StatusPublisherTests {
    func status(_ updated: Int64, phase: ParticipantPhase = .writer) -> ParticipantStatus {
        ParticipantStatus(
            role: .host, name: "host", priority: 100, pid: getpid(), lifecycle: .foreground, phase: phase,
            epoch: 3, managerState: "accepting_syncs", updated: updated)
    }

    @Test("while one status is written, only the newest handed in waits; flush returns once it is written")
    func newestWins() async throws {
        let written = Locked<[Int64]>([])
        let outcomes = Locked<[String?]>([])
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let publisher = StatusPublisher(
            write: { status in
                if status.updated == 1 {
                    started.signal()
                    proceed.wait()
                }
                written.withLock { $0.append(status.updated) }
            },
            outcome: { error in outcomes.withLock { $0.append(error) } })
        publisher.submit(status(1))
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                started.wait()
                continuation.resume()
            }
        }
        // The first write is under way: these queue behind it, each replacing the one before.
        for updated in Int64(2)...5 { publisher.submit(status(updated)) }
        proceed.signal()
        await publisher.flush()
        #expect(written.withLock { $0 } == [1, 5])
        #expect(outcomes.withLock { $0 } == [nil, nil])

        // Idle again: the next status is written on its own.
        publisher.submit(status(6))
        await publisher.flush()
        #expect(written.withLock { $0 } == [1, 5, 6])
    }

    @Test("a failed write is reported with its error, and the next status is written once it can be")
    func failureReported() async throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        // A file where the participants directory belongs: the status cannot be written.
        #expect(FileManager.default.createFile(atPath: shared.participantsPath, contents: Data()))
        let outcomes = Locked<[String?]>([])
        let publisher = StatusPublisher(directory: shared) { error in outcomes.withLock { $0.append(error) } }
        publisher.submit(status(1))
        await publisher.flush()
        let failed = outcomes.withLock { $0 }
        #expect(failed.count == 1)
        #expect(failed.first??.isEmpty == false, "the error is reported")
        #expect(!FileManager.default.fileExists(atPath: shared.participantsPath + "/host.json"))

        try FileManager.default.removeItem(atPath: shared.participantsPath)
        publisher.submit(status(2, phase: .releasing))
        await publisher.flush()
        #expect(outcomes.withLock { $0 }.last == .some(nil))
        let data = try #require(FileManager.default.contents(atPath: shared.participantsPath + "/host.json"))
        let read = try JSONDecoder().decode(ParticipantStatus.self, from: data)
        #expect(read == status(2, phase: .releasing))
        _ = temp
    }
}
