import Testing

@testable import BatonCoordinator

@Suite("A lease timeout names its holder and what to do")
struct LeaseTimeoutMessageTests {
    func status(_ name: String, pid: Int32, lifecycle: Lifecycle) -> ParticipantStatus {
        ParticipantStatus(
            role: .host, name: name, priority: 100, pid: pid, lifecycle: lifecycle, phase: .writer, epoch: 3,
            managerState: "accepting_syncs", updated: 0)
    }

    @Test("a foreground participant: the signal command with its real name and directory")
    func foregroundParticipant() {
        let message = WriterLease.timeoutMessage(
            holder: ("host", 42), participant: status("host", pid: 42, lifecycle: .foreground),
            directory: "/tmp/d", timeout: .seconds(2))
        #expect(message.contains("held by participant 'host' (pid 42)"))
        #expect(message.contains("within 2.0 seconds"))
        #expect(message.contains("(baton signal --dir /tmp/d host background)"))
        #expect(!message.contains("NAME"))
    }

    @Test("a participant not in the store's history yet is named by its status")
    func unrecordedParticipant() {
        let message = WriterLease.timeoutMessage(
            holder: (nil, 42), participant: status("ext", pid: 42, lifecycle: .foreground),
            directory: "/tmp/d", timeout: .seconds(1))
        #expect(message.contains("baton signal --dir /tmp/d ext background"))
        #expect(message.contains("held by participant 'ext' (pid 42)"))
    }

    @Test("a participant already in the background: wait, no signal to send")
    func backgroundParticipant() {
        let message = WriterLease.timeoutMessage(
            holder: ("host", 42), participant: status("host", pid: 42, lifecycle: .background),
            directory: "/tmp/d", timeout: .seconds(2))
        #expect(message.contains("in the background and handing the lease over"))
        #expect(!message.contains("baton signal"))
    }

    @Test("a holder that is no participant, and a holder gone: no signal command, no placeholder")
    func otherHolders() {
        let tool = WriterLease.timeoutMessage(
            holder: ("tool.store-upsert", 7), participant: nil, directory: "/tmp/d", timeout: .seconds(2))
        #expect(tool.contains("held by 'tool.store-upsert' (pid 7), which is not a participant"))
        #expect(tool.contains("wait for it to finish"))
        let unrecorded = WriterLease.timeoutMessage(
            holder: (nil, 7), participant: nil, directory: "/tmp/d", timeout: .seconds(2))
        #expect(unrecorded.contains("held by pid 7, which is not a participant"), "\(unrecorded)")
        let gone = WriterLease.timeoutMessage(
            holder: nil, participant: nil, directory: "/tmp/d", timeout: nil)
        #expect(gone.contains("its holder has gone since; try again"))
        for message in [tool, unrecorded, gone] {
            #expect(!message.contains("baton signal") && !message.contains("NAME"), "\(message)")
        }
    }
}
