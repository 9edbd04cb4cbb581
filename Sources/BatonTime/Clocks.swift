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

    /// `millis` (since 1970) as ISO 8601 in UTC with milliseconds: `2026-11-25T03:42:36.123Z`.
    public static func iso8601(millis: Int64) -> String {
        let (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        let (whole, milli) = fraction < 0 ? (seconds - 1, fraction + 1000) : (seconds, fraction)
        var time = time_t(whole)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milli), 3))Z"
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
