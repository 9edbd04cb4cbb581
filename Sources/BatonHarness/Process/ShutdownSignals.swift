import BatonLocking
import Foundation

/// The write end of the pipe the signal handler writes to (set once, before the handler is
/// installed; a signal handler can only reach globals).
nonisolated(unsafe) private var shutdownSignalPipe: Int32 = -1

/// SIGTERM, SIGINT and SIGHUP (the terminal went away) run `handler` (instead of killing the
/// process).
///
/// The handler is a plain `sigaction` handler, installed before `init` returns, that writes a
/// byte to a pipe; a thread of its own reads the pipe and calls `handler`. No signal is lost:
/// dispatch signal sources are armed asynchronously, and a signal that arrived before them (with
/// the disposition already `SIG_IGN`) was dropped, leaving a participant deaf to SIGTERM.
public final class ShutdownSignals: Sendable {
    /// The signals that run the handler.
    static let signals = [SIGTERM, SIGINT, SIGHUP]

    private let reader: Int32
    private let cancelled: @Sendable () -> Void

    /// `cancelled` runs once ``cancel()`` has restored the default dispositions.
    public init(cancelled: @escaping @Sendable () -> Void = {}, _ handler: @escaping @Sendable () -> Void) {
        self.cancelled = cancelled
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            reader = -1
            return
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        reader = fds[0]
        shutdownSignalPipe = fds[1]
        let read = fds[0]
        startThread(named: "baton.signals") {
            var byte: UInt8 = 0
            while true {
                let count = Glibc.read(read, &byte, 1)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { return }
                handler()
            }
        }
        for number in Self.signals {
            signal(number) { _ in
                var byte: UInt8 = 1
                _ = write(shutdownSignalPipe, &byte, 1)
            }
        }
    }

    /// Restores the default dispositions (a later signal ends the process).
    public func cancel() {
        for number in Self.signals { signal(number, SIG_DFL) }
        cancelled()
    }
}
