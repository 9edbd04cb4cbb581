/// Pending events by time, ties broken by a number the seed drew when each was scheduled: the
/// seed decides the order of every set of events due at once. The heap orders small keys; the
/// events themselves stay in slots (moving them on every swap costs more than the rest).
struct EventQueue<Payload> {
    private struct Key {
        var time: UInt64
        var tie: UInt64
        var slot: Int

        func precedes(_ other: Key) -> Bool {
            time != other.time ? time < other.time : tie < other.tie
        }
    }

    private var heap: [Key] = []
    private var slots: [Payload?] = []
    private var free: [Int] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func push(_ payload: Payload, at time: UInt64, tie: UInt64) {
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            slots[slot] = payload
        } else {
            slot = slots.count
            slots.append(payload)
        }
        heap.append(Key(time: time, tie: tie, slot: slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (time: UInt64, payload: Payload)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let (left, right) = (2 * parent + 1, 2 * parent + 2)
            var smallest = parent
            if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        guard let payload = slots[first.slot].take() else { return nil }
        free.append(first.slot)
        return (first.time, payload)
    }
}
