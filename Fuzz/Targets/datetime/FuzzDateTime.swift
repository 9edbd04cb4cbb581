// SOQL date-time literals. Invariants: an accepted literal formats to the API's form, which
// parses back to the same instant; formatting any instant gives a literal that parses back.
import FuzzSupport
import SOQL

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    if size >= 8 {
        let instant = UnsafeRawBufferPointer(bytes).loadUnaligned(as: Int64.self)
        _ = DateTimeLiteral.format(milliseconds: instant)
        // Years 0001 to 9999, the range the API's four-digit form can hold.
        if instant >= -62_135_596_800_000 && instant <= 253_402_300_799_999 {
            let text = DateTimeLiteral.format(milliseconds: instant)
            require(
                DateTimeLiteral.milliseconds(text) == instant, "format → parse changed \(instant): \(text)")
        }
    }
    guard let text = fuzzText(bytes), let milliseconds = DateTimeLiteral.milliseconds(text) else { return 0 }
    let printed = DateTimeLiteral.format(milliseconds: milliseconds)
    require(DateTimeLiteral.milliseconds(printed) == milliseconds, "parse → format → parse changed \(text)")
    return 0
}
