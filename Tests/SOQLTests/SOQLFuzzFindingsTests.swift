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

    @Test(
        "a digit with a combining mark, or any other non-ASCII number, is an error at its position, never an endless scan",
        arguments: [
            "SELECT Id FROM Account WHERE Amount > 2\u{0338}", "Sa 2\u{0338}ELCT",
            "SELECT Id FROM A WHERE x = \u{0663}", "SELECT Id FROM A LIMIT -\u{0338}1",
        ])
    func nonASCIIDigits(_ text: String) throws {
        #expect {
            try SOQLQuery(parsing: text)
        } throws: { error in
            guard let error = error as? SOQLError else { return false }
            return error.position >= 0 && error.position <= text.count
        }
    }

    @Test(
        "a combining mark after an escaped character stays text of the string: the query prints and reads back the same",
        arguments: ["a\r\u{032E}b", "\n\u{0301}", "it\u{2019}s \t\u{0308}", "'\u{0301}", "\\\u{0301}%"])
    func combiningAfterEscape(_ value: String) throws {
        let query = try SOQLQuery(
            parsing: "SELECT Id FROM Account WHERE Name = \(Literal.string(value).soql)")
        #expect(try SOQLQuery(parsing: query.soql) == query)
        #expect(query.soql.contains(Literal.string(value).soql))
    }

    @Test(
        "a date-time whose offset moves it out of years 0000-9999 is refused; the edges read back",
        arguments: [
            ("0000-01-01T00:01:09+0530", false), ("9999-12-31T23:59:59-01:00", false),
            ("0000-01-01T00:00:00Z", true), ("9999-12-31T23:59:59.999Z", true),
            ("0000-01-01T05:30:00+05:30", true),
        ])
    func dateTimeRange(_ text: String, _ accepted: Bool) throws {
        let instant = DateTimeLiteral.milliseconds(text)
        #expect((instant != nil) == accepted)
        if let instant {
            #expect(DateTimeLiteral.milliseconds(DateTimeLiteral.format(milliseconds: instant)) == instant)
        }
    }
}
