import BatonHarness
import BatonLocking
import BatonStore
import Foundation

/// The demo's progress on the terminal: a redrawn status block on a TTY (who holds the baton,
/// each sync's status, a progress bar), plain timestamped lines otherwise.
final class LiveView: DemoView {
    let enabled: Bool
    let isTerminal: Bool
    let start = ContinuousClock.now
    private let drawn = Locked(0)

    init(enabled: Bool) {
        self.enabled = enabled
        isTerminal = isatty(STDOUT_FILENO) == 1
    }

    var elapsed: String {
        let seconds = (ContinuousClock.now - start).inSeconds
        return String(format: "%6.2fs", seconds)
    }

    /// A step of the script.
    func step(_ text: String) {
        guard enabled else { return }
        if isTerminal { clear() }
        CLIOutput.line("[\(elapsed)] \(text)")
    }

    /// The current state: redrawn in place on a terminal; on a pipe, printed only when asked.
    func state(writer: String, syncs: [(String, String, Int)], printPlain: Bool) {
        guard enabled else { return }
        let lines =
            ["baton: \(writer)"]
            + syncs.map { name, status, progress in
                let width = 30
                let filled = min(width, max(0, progress * width / 100))
                let bar =
                    String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                return
                    "  \(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(status.padding(toLength: 8, withPad: " ", startingAt: 0)) \(bar) \(progress)%"
            }
        if isTerminal {
            clear()
            for line in lines { CLIOutput.line(line) }
            drawn.withLock { $0 = lines.count }
        } else if printPlain {
            CLIOutput.line("[\(elapsed)] " + lines.joined(separator: " |"))
        }
    }

    func finish() {
        if isTerminal { clear() }
    }

    private func clear() {
        let count = drawn.withLock { count in
            defer { count = 0 }
            return count
        }
        if count > 0 { FileHandle.standardOutput.write(Data("\u{1B}[\(count)A\u{1B}[J".utf8)) }
    }
}
