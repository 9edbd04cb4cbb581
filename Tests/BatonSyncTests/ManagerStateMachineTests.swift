import BatonSync
import Testing

@Suite("Manager state machine (no I/O)")
struct ManagerStateMachineTests {
    @Test("stop with running tasks requests a stop; the last task ending completes it")
    func stopWithTasks() {
        var machine = ManagerStateMachine()
        #expect(machine.submit() == .accept)
        #expect(machine.stop(activeTasks: 2) == .interruptTasks)
        #expect(machine.state == .stopRequested && machine.isStopping && !machine.isStopped)
        #expect(machine.submit() == .reject(.stopRequested))
        _ = machine.taskEnded(remaining: 1)
        #expect(machine.isStopping)
        _ = machine.taskEnded(remaining: 0)
        #expect(machine.state == .stopped && machine.isStopped && !machine.isStopping)
        #expect(machine.submit() == .reject(.stopped))
    }

    @Test("stop with nothing running is stopped at once; stopping again changes nothing")
    func stopIdle() {
        var machine = ManagerStateMachine()
        #expect(machine.stop(activeTasks: 0) == .none)
        #expect(machine.isStopped)
        #expect(machine.stop(activeTasks: 0) == .none)
        #expect(machine.isStopped)
    }

    @Test("restart resumes from stopped, waits while stopping, and is a no-op when accepting")
    func restart() {
        var machine = ManagerStateMachine()
        #expect(machine.restart() == .none)
        _ = machine.stop(activeTasks: 1)
        #expect(machine.restart() == .waitForStop)
        #expect(machine.state == .stopRequested)
        _ = machine.taskEnded(remaining: 0)
        #expect(machine.restart() == .resume)
        #expect(machine.state == .acceptingSyncs)
        #expect(machine.submit() == .accept)
    }

    @Test("task endings while accepting do not change the state")
    func taskEndedWhileAccepting() {
        var machine = ManagerStateMachine()
        _ = machine.taskEnded(remaining: 0)
        #expect(machine.state == .acceptingSyncs)
    }
}
