/// Pending events by time, ties broken by a number the seed drew when each was scheduled: the
/// seed decides the order of every set of events due at once.
struct EventQueue<Payload> {
    private struct Entry {
        var time: UInt64
        var tie: UInt64
        var payload: Payload

        func precedes(_ other: Entry) -> Bool {
            time != other.time ? time < other.time : tie < other.tie
        }
    }

    private var heap: [Entry] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func push(_ payload: Payload, at time: UInt64, tie: UInt64) {
        heap.append(Entry(time: time, tie: tie, payload: payload))
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
            var first = parent
            if left < heap.count, heap[left].precedes(heap[first]) { first = left }
            if right < heap.count, heap[right].precedes(heap[first]) { first = right }
            if first == parent { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (first.time, first.payload)
    }
}
