import BatonJSON
import Testing

@testable import BatonHarness

@Suite struct FaultBagTests {}
