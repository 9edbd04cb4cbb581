// The lifecycle signal file's content (`D/lifecycle/NAME`).
// Invariants: a file is valid only when it holds one lifecycle word (any case, any white space
// around it), empty only when it holds white space alone, and the content is never echoed.
import BatonCoordinator
import Foundation
import FuzzSupport

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: {
        $0.isWhitespace || $0.isNewline
    })
    switch LifecycleSignal.parse(bytes) {
    case .valid(let lifecycle):
        require(size <= LifecycleSignal.maxSize, "a file over the size limit was read")
        require(
            words.count == 1 && words[0].lowercased() == lifecycle.rawValue, "valid without the word alone")
    case .empty:
        require(words.isEmpty, "empty while holding a word")
    case .invalid(let reason):
        require(!reason.isEmpty && reason.utf8.count < 80, "the reason is empty or echoes the content")
    case .missing:
        fatalError("content cannot be missing")
    }
    return 0
}
