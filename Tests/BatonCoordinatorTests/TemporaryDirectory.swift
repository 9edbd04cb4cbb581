import Foundation

/// A fresh directory under the system temp dir, removed when the test ends.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/baton-test-" + UUID().uuidString.prefix(12)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o700)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
