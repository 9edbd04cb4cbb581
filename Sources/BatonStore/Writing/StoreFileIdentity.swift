import Foundation
import Synchronization

/// The identity (device and inode) of the store file as opened. A store file deleted, renamed
/// or replaced under a running process is detected by comparing it with what the path names now:
/// such a process must not write (its commits would go to a file nobody else sees).
final class StoreFileIdentity: Sendable {
    let path: String
    private let opened = Mutex<(dev: UInt64, ino: UInt64)?>(nil)

    init(path: String) {
        self.path = path
    }

    static func stat(_ path: String) -> (dev: UInt64, ino: UInt64)? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Records what the path names now (call once the store is open).
    func record() {
        let now = Self.stat(path)
        opened.withLock { $0 = now }
    }

    /// Nil when the path still names the opened file, else what happened to it.
    func problem() -> String? {
        guard let opened = opened.withLock({ $0 }) else { return nil }
        guard let now = Self.stat(path) else {
            return "the store file \(path) was deleted or renamed while this process had it open"
        }
        if now.dev != opened.dev || now.ino != opened.ino {
            return "the store file \(path) was replaced by another file while this process had it open"
        }
        return nil
    }
}
