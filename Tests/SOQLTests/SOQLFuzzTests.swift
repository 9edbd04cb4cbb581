import SOQL
import Testing

@Suite("SOQL parser under random input")
struct SOQLFuzzTests {
    static let seeds = [
        "SELECT Id, Name FROM Account WHERE Name LIKE 'A%' AND Amount >= 10.5 ORDER BY Name DESC NULLS LAST LIMIT 10",
        "SELECT Id, (SELECT Id FROM Contacts) FROM Account WHERE NOT (a = 1 OR b IN ('x', 'y')) OFFSET 3",
        "SELECT Id FROM Account WHERE LastModifiedDate >= 2024-01-31T10:00:00.000+0000 AND Closed = false",
        "SELECT MAX(LastModifiedDate), MIN(CreatedDate) FROM Account WHERE Name != null",
    ]

    /// A small deterministic generator, so a failure names a reproducible case.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state
        }
    }

    @Test(
        "mutated queries give a query that round-trips, or a typed error — never a crash", arguments: 0..<40)
    func mutations(seed: UInt64) {
        var rng = Generator(state: seed &+ 1)
        let alphabet = Array("SELECTFROMWHEREANDORNOTLIKEIN()'=<>!,.%_ 0123456789-:TZ+\\\n\u{0}é")
        for _ in 0..<50 {
            var chars = Array(Self.seeds[Int(rng.next() % UInt64(Self.seeds.count))])
            for _ in 0..<(1 + rng.next() % 6) {
                let position = Int(rng.next() % UInt64(chars.count + 1))
                switch rng.next() % 3 {
                case 0 where position < chars.count: chars.remove(at: position)
                case 1: chars.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: position)
                default:
                    if position < chars.count {
                        chars[position] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                    }
                }
            }
            let text = String(chars)
            do {
                let query = try SOQLQuery(parsing: text)
                #expect(try SOQLQuery(parsing: query.soql) == query, "round trip of \(text.debugDescription)")
            } catch let error as SOQLError {
                #expect(error.position >= 0 && error.position <= text.count + 1)
            } catch {
                Issue.record("untyped error \(error) for \(text.debugDescription)")
            }
        }
    }
}
