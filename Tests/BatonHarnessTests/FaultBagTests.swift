import BatonJSON
import Testing

@testable import BatonHarness

@Suite("chaos fault scheduling")
struct FaultBagTests {
    func schedule(seed: UInt64, rounds: Int) -> [ChaosFault] {
        var random = SplitMix64(seed: seed)
        var bag = FaultBag()
        return (0..<rounds).map { _ in bag.next(using: &random) }
    }

    @Test("every block of rounds holds each fault exactly once")
    func eachFaultOncePerBlock() {
        let kinds = ChaosFault.allCases.count
        let faults = schedule(seed: 1, rounds: kinds * 4)
        for block in 0..<4 {
            let slice = faults[(block * kinds)..<((block + 1) * kinds)]
            #expect(Set(slice) == Set(ChaosFault.allCases), "block \(block)")
            #expect(slice.count == kinds)
        }
    }

    @Test("the same seed replays the same faults; other seeds order them otherwise")
    func seeded() {
        let rounds = ChaosFault.allCases.count * 3
        #expect(schedule(seed: 42, rounds: rounds) == schedule(seed: 42, rounds: rounds))
        let others = (43...47).map { schedule(seed: $0, rounds: rounds) }
        #expect(others.contains { $0 != schedule(seed: 42, rounds: rounds) })
    }

    @Test("a run shorter than a block still draws distinct faults")
    func shortRun() {
        let faults = schedule(seed: 7, rounds: 5)
        #expect(Set(faults).count == 5)
    }

    @Test("only the rounds that send a batch up make local edits first")
    func localEdits() {
        let editing = ChaosFault.allCases.filter(\.needsLocalEdits)
        #expect(Set(editing) == [.killAfterServerCommit, .droppedAfterCommit])
    }
}
