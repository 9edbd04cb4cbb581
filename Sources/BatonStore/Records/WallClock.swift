import Foundation

/// Wall-clock time as the store records it (not a `Clock`: the standard library's protocol of
/// that name stays visible to every importer).
public enum WallClock {
    /// Milliseconds since 1970.
    public static func nowMillis() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
