import BatonStore
import Testing

@Suite("Store fidelity")
struct StoreFidelityTests {
    @Test("records keep their exact values through the store")
    func storeFidelity() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("things", indexSpecs: [])
        let record: JSONObject = [
            "unicode": "Ünïcödé ✓ 😀", "big": .int(9_007_199_254_740_993), "double": 0.1, "whole": 2.0,
            "nested": ["list": [1, "two", ["three": 3]]], "null": nil, "flag": false,
        ]
        let entry = try fixture.unfenced.upsert(record, into: "things")
        #expect(try fixture.store.entry(entry.entryId, in: "things")?.record == record)
    }
}
