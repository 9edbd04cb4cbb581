#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Wall-clock time, as the store, the logs and the server record it: milliseconds since 1970
/// (`CLOCK_REALTIME`). Only for time stamps people and other systems read; never for a timeout
/// or a lease term, which a clock jump would stretch or cut (use ``MonotonicClock``).
///
/// (Not a `Clock`: the standard library's protocol of that name stays visible to every importer.)
public enum WallClock {
    /// Milliseconds since 1970.
    public static func nowMillis() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

/// `CLOCK_MONOTONIC`: one clock for every process of a boot, never set back or forward, so two
/// processes can compare its readings (a heartbeat's age, a log line's time). What the lease,
/// the logs and the benches time with.
public enum MonotonicClock {
    /// Nanoseconds since boot.
    public static func nanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Milliseconds since boot, with a fraction.
    public static func millis() -> Double {
        Double(nanos()) / 1_000_000
    }
}

extension Duration {
    /// Whole nanoseconds (saturating far beyond any timeout Baton uses).
    public var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? (seconds < 0 ? .min : .max) : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Whole milliseconds.
    public var inWholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// Milliseconds, with a fraction.
    public var inMilliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    /// Seconds, with a fraction.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
