/// Salesforce date-times: parses the forms SOQL accepts and prints the API's own form,
/// `yyyy-MM-dd'T'HH:mm:ss.SSS+0000`. Pure arithmetic, no Foundation.
public enum DateTimeLiteral {
    /// Milliseconds since 1970 for `2024-01-31T10:00:00Z`, `…:00.123+0000`, `…:00-05:00`; `nil`
    /// when the text is not a valid date-time.
    public static func milliseconds(_ text: String) -> Int64? {
        let c = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= c.count else { return nil }
            var value = 0
            for byte in c[start..<start + count] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard c.count >= 20, let year = number(0, 4), c[4] == 45, let month = number(5, 2), c[7] == 45,
            let day = number(8, 2), c[10] == 84, let hour = number(11, 2), c[13] == 58,
            let minute = number(14, 2),
            c[16] == 58, let second = number(17, 2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else {
            return nil
        }
        var index = 19
        var millis = 0
        if index < c.count, c[index] == 46 {
            index += 1
            var digits = 0
            var fraction = 0
            while index < c.count, (48...57).contains(c[index]) {
                if digits < 3 {
                    fraction = fraction * 10 + Int(c[index] - 48)
                    digits += 1
                }
                index += 1
            }
            guard digits > 0 else { return nil }
            while digits < 3 {
                fraction *= 10
                digits += 1
            }
            millis = fraction
        }
        var offsetMinutes = 0
        guard index < c.count else { return nil }
        if c[index] == 90 {
            index += 1
        } else if c[index] == 43 || c[index] == 45 {
            let sign = c[index] == 43 ? 1 : -1
            index += 1
            guard let hours = number(index, 2) else { return nil }
            index += 2
            if index < c.count, c[index] == 58 { index += 1 }
            guard let minutes = number(index, 2) else { return nil }
            index += 2
            offsetMinutes = sign * (hours * 60 + minutes)
        } else {
            return nil
        }
        guard index == c.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds =
            Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        let instant = seconds * 1000 + Int64(millis)
        // An offset can move a time of year 0000 or 9999 out of the four-digit years the API's
        // form prints (0000-01-01T00:01+05:30 is in year -1): refused, like any text that names
        // no such instant.
        guard representable.contains(instant) else { return nil }
        return instant
    }

    /// The instants ``format(milliseconds:)`` prints in four-digit years: 0000-01-01T00:00:00.000Z
    /// to 9999-12-31T23:59:59.999Z.
    public static let representable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// `yyyy-MM-dd'T'HH:mm:ss.SSS+0000` for milliseconds since 1970 (UTC).
    public static func format(milliseconds: Int64) -> String {
        var seconds = milliseconds / 1000
        var millis = milliseconds % 1000
        if millis < 0 {
            millis += 1000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civilFromDays(Int(days))
        let hour = Int(secondOfDay / 3600)
        let minute = Int(secondOfDay % 3600 / 60)
        let second = Int(secondOfDay % 60)
        guard (0...9999).contains(year) else {
            func pad(_ value: Int, _ width: Int) -> String {
                let text = String(value)
                return String(repeating: "0", count: max(0, width - text.count)) + text
            }
            return
                "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(Int(millis), 3))+0000"
        }
        // `yyyy-MM-ddTHH:mm:ss.SSS+0000`, 28 bytes, written in place (a date goes into every
        // record a query answers).
        return String(unsafeUninitializedCapacity: 28) { buffer in
            var offset = 0
            /// `value` in `width` digits, then `separator` if any.
            func put(_ value: Int, _ width: Int, then separator: Unicode.Scalar?) {
                var value = value
                for position in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                offset += width
                if let separator {
                    buffer[offset] = UInt8(ascii: separator)
                    offset += 1
                }
            }
            put(year, 4, then: "-")
            put(month, 2, then: "-")
            put(day, 2, then: "T")
            put(hour, 2, then: ":")
            put(minute, 2, then: ":")
            put(second, 2, then: ".")
            put(Int(millis), 3, then: "+")
            put(0, 4, then: nil)
            return offset
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z: Int) -> (Int, Int, Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
