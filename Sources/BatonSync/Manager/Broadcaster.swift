import BatonLocking

/// Hands each element to every current subscriber, as it happens. A subscriber that does not
/// keep up loses the oldest of what it has not read (the newest `buffering` elements wait); the
/// sender never waits for one. Used for a manager's sync updates and a participant's events.
package final class Broadcaster<Element: Sendable>: Sendable {
    private let buffering: Int
    private let subscribers = Locked<(next: Int, all: [Int: AsyncStream<Element>.Continuation])>((0, [:]))

    package init(buffering: Int) {
        self.buffering = buffering
    }

    /// A subscription of its own, from now on, until ``finish()`` or until it is dropped.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self, bufferingPolicy: .bufferingNewest(buffering))
        let id = subscribers.withLock { state in
            state.next += 1
            state.all[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    package func send(_ element: Element) {
        for continuation in subscribers.withLock({ Array($0.all.values) }) { continuation.yield(element) }
    }

    /// Ends every subscription.
    package func finish() {
        let all = subscribers.withLock { state in
            defer { state.all = [:] }
            return Array(state.all.values)
        }
        for continuation in all { continuation.finish() }
    }
}
