/// Byte counts as people write and read them: `65536`, `64K`, `8M`, `1G` (powers of 1024).
public enum ByteCount {
    /// The bytes `text` names: digits, optionally followed by `K`, `M` or `G` (KiB, MiB, GiB;
    /// either case, an optional `B` or `iB` after it). Nil for anything else, or past `Int64`.
    public static func parse(_ text: String) -> Int64? {
        var digits = Substring(text)
        var unit = ""
        while let last = digits.last, last.isLetter {
            unit = String(last).uppercased() + unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits)
        else {
            return nil
        }
        let shift: Int64
        switch unit {
        case "", "B": shift = 0
        case "K", "KB", "KIB": shift = 10
        case "M", "MB", "MIB": shift = 20
        case "G", "GB", "GIB": shift = 30
        default: return nil
        }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: 1 << shift)
        return overflow ? nil : bytes
    }

    /// `812 B`, `64.0 KiB`, `8.0 MiB`, `1.2 GiB`.
    public static func text(_ bytes: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return "\((value * 10).rounded() / 10) \(units[unit])"
    }
}
