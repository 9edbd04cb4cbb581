import Foundation

/// A fresh directory (mode 0700) under the system temp dir, removed when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/baton-test-" + UUID().uuidString.prefix(12)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o700)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
