import FuzzDriver
import Glibc

// Compiled into every fuzz target (Scripts/fuzz.sh): the checks a target makes beyond "does not
// crash". A failed check traps, so libFuzzer keeps the input as a crash artifact.

/// The fuzz input as bytes.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
}

/// The input as a string, when it is valid UTF-8 (targets whose parser takes a `String`).
public func fuzzText(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    String(validating: bytes, as: UTF8.self)
}

/// Stops the run with `message` when `condition` is false: an invariant of the parser is broken.
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("invariant broken: \(message())") }
}

/// Runs libFuzzer with the process's arguments (`Scripts/fuzz.sh` passes the corpus and the
/// limits), calling `target` with each input; never returns.
public func runFuzzer(_ target: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    exit(baton_fuzz_run(CommandLine.argc, CommandLine.unsafeArgv, target))
}
