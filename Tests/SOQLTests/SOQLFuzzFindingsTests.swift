import SOQL
import Testing

/// Inputs the SOQL fuzz target (`Scripts/fuzz.sh soql`) found, each kept as a case.
@Suite("SOQL: inputs found by fuzzing")
struct SOQLFuzzFindingsTests {
    @Test("fields added to a COUNT() query leave it as it is: COUNT() must stay alone in its list")
    func countKeepsItsList() throws {
        let query = try SOQLQuery(parsing: "SELECT COUNT() FROM Account")
        #expect(query.isCount)
        let mutated = query.addingFields(["Id", "LastModifiedDate"])
        #expect(mutated == query)
        #expect(try SOQLQuery(parsing: mutated.soql) == mutated)
        #expect(!(try SOQLQuery(parsing: "SELECT Id FROM Account").isCount))
    }
}
