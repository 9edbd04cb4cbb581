import BatonStore

/// Checks a lease history: epochs strictly increase and intervals never overlap (each holder
/// released, or was taken over, no later than the next one acquired).
public enum LeaseAudit {
    public struct Violation: Sendable, Hashable, CustomStringConvertible {
        public var epoch: Int64
        public var problem: String
        public var description: String { "epoch \(epoch): \(problem)" }
    }

    public static func check(_ history: [LeaseRecord]) -> [Violation] {
        var violations: [Violation] = []
        for (previous, next) in zip(history, history.dropFirst()) {
            if next.epoch <= previous.epoch {
                violations.append(
                    Violation(epoch: next.epoch, problem: "epoch does not increase after \(previous.epoch)"))
            }
            guard let released = previous.released else {
                violations.append(
                    Violation(
                        epoch: previous.epoch, problem: "never released, yet epoch \(next.epoch) was granted")
                )
                continue
            }
            if released > next.acquired {
                violations.append(
                    Violation(
                        epoch: next.epoch,
                        problem:
                            "acquired at \(next.acquired) before epoch \(previous.epoch) released at \(released)"
                    ))
            }
            if released < previous.acquired {
                violations.append(
                    Violation(epoch: previous.epoch, problem: "released before it was acquired"))
            }
        }
        return violations
    }
}
