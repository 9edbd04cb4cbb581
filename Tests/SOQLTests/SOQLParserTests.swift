import SOQL
import Testing

@Suite("SOQL parse and print")
struct SOQLParserTests {
    @Test(
        "canonical queries print back exactly",
        arguments: [
            "SELECT Id FROM Account",
            "SELECT Id, Name, Owner.Name FROM Account WHERE Name = 'Acme'",
            "SELECT Id FROM Account WHERE Amount >= 10.5 AND Amount < 100 OR Name != null",
            "SELECT Id FROM Account WHERE (Name LIKE 'A%' OR Name LIKE 'B\\_%') AND NOT Industry IN ('Energy', 'Retail')",
            "SELECT Id FROM Account WHERE Industry NOT IN ('x') AND Name NOT LIKE '%z'",
            "SELECT Id FROM Account WHERE a = 1 AND (b = 2 AND c = 3)",
            "SELECT Id FROM Account WHERE NOT (a = 1 OR b = 2)",
            "SELECT Id FROM Account WHERE IsDeleted = false AND Flag = true",
            "SELECT Id FROM Account WHERE CloseDate > 2024-01-31 AND LastModifiedDate <= 2024-01-31T10:00:00.000+0000",
            "SELECT Id, (SELECT Id FROM Contacts ORDER BY Name) FROM Account",
            "SELECT Id FROM Account ORDER BY Name DESC NULLS LAST, Id ASC LIMIT 10 OFFSET 20",
            "SELECT Id FROM Account WHERE Name = 'it\\'s \\\\ here\\n'",
            "SELECT Id FROM Account WHERE Amount = -3",
        ])
    func roundTrip(text: String) throws {
        let query = try SOQLQuery(parsing: text)
        #expect(query.soql == text)
        #expect(try SOQLQuery(parsing: query.soql) == query)
    }

    @Test(
        "keywords are case-insensitive and spacing is free",
        arguments: [
            (
                "select id from Account where name='x' order by name desc limit 5",
                "SELECT id FROM Account WHERE name = 'x' ORDER BY name DESC LIMIT 5"
            ),
            (
                "SELECT  Id ,Name\nFROM Account\tWHERE Amount<>5",
                "SELECT Id, Name FROM Account WHERE Amount != 5"
            ),
            ("Select Id From Account Where Not a = 1", "SELECT Id FROM Account WHERE NOT a = 1"),
        ])
    func caseInsensitive(input: String, expected: String) throws {
        #expect(try SOQLQuery(parsing: input).soql == expected)
    }

    @Test("AND binds tighter than OR, NOT tighter than AND")
    func precedence() throws {
        let query = try SOQLQuery(parsing: "SELECT Id FROM A WHERE a = 1 OR b = 2 AND NOT c = 3")
        let expected = Condition.or(
            .comparison(field: "a", op: .equal, value: .number("1")),
            .and(
                .comparison(field: "b", op: .equal, value: .number("2")),
                .not(.comparison(field: "c", op: .equal, value: .number("3")))))
        #expect(query.condition == expected)
    }

    @Test(
        "errors name the position and the token",
        arguments: [
            ("SELEC Id FROM Account", 0, "SELEC"),
            ("SELECT Id Account", 10, "Account"),
            ("SELECT Id FROM Account WHERE", 28, "end of query"),
            ("SELECT Id FROM Account WHERE Name = ", 36, "end of query"),
            ("SELECT Id FROM Account WHERE Name ~ 'x'", 34, "~"),
            ("SELECT Id FROM Account WHERE Name = 'open", 36, "'open"),
            ("SELECT Id FROM Account LIMIT -1", 29, "-1"),
            ("SELECT Id FROM Account ORDER BY", 31, "end of query"),
            ("SELECT Id FROM Account extra", 23, "extra"),
            ("SELECT Id, FROM Account", 11, "FROM"),
            ("SELECT Id FROM Account WHERE a IN ()", 35, ")"),
            ("SELECT Id FROM Account WHERE d > 2024-01-01T99:00:00Z", 33, "2024-01-01T99:00:00Z"),
        ])
    func errors(text: String, position: Int, token: String) {
        #expect {
            try SOQLQuery(parsing: text)
        } throws: { error in
            guard let error = error as? SOQLError else { return false }
            return error.position == position && error.token == token
                && error.description.contains("position \(position)")
        }
    }

    @Test("nesting beyond the limit is refused, not a crash")
    func nestingLimit() {
        let deep =
            "SELECT Id FROM A WHERE " + String(repeating: "(", count: 100) + "a = 1"
            + String(repeating: ")", count: 100)
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: deep) }
        let notChain = "SELECT Id FROM A WHERE " + String(repeating: "NOT ", count: 100) + "a = 1"
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: notChain) }
    }

    @Test("date-times parse in every accepted form and print in the API's form")
    func dateTimes() {
        #expect(DateTimeLiteral.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(DateTimeLiteral.milliseconds("2024-02-29T12:34:56.789+0000") == 1_709_210_096_789)
        #expect(DateTimeLiteral.milliseconds("2024-02-29T13:34:56.789+01:00") == 1_709_210_096_789)
        #expect(DateTimeLiteral.milliseconds("2024-02-29T12:34:56.7Z") == 1_709_210_096_700)
        #expect(DateTimeLiteral.format(milliseconds: 1_709_210_096_789) == "2024-02-29T12:34:56.789+0000")
        #expect(DateTimeLiteral.format(milliseconds: 0) == "1970-01-01T00:00:00.000+0000")
        #expect(DateTimeLiteral.milliseconds("2024-02-29") == nil)
        #expect(DateTimeLiteral.milliseconds("2024-13-01T00:00:00Z") == nil)
        for ms: Int64 in [0, 1, 999, 86_399_999, 951_782_400_000, 4_102_444_800_123, -1, -86_400_001] {
            #expect(DateTimeLiteral.milliseconds(DateTimeLiteral.format(milliseconds: ms)) == ms)
        }
        #expect(DateTimeLiteral.format(milliseconds: -1) == "1969-12-31T23:59:59.999+0000")
        // The last millisecond of year 9999 is written in place; the next year goes the long way.
        #expect(DateTimeLiteral.format(milliseconds: 253_402_300_799_999) == "9999-12-31T23:59:59.999+0000")
        #expect(DateTimeLiteral.format(milliseconds: 253_402_300_800_000) == "10000-01-01T00:00:00.000+0000")
    }

    @Test("COUNT() parses alone, prints back, and is refused beside other items")
    func count() throws {
        let query = try SOQLQuery(parsing: "select count() from Account where Name like 'A%'")
        #expect(query.fields == [.count])
        #expect(query.soql == "SELECT COUNT() FROM Account WHERE Name LIKE 'A%'")
        #expect(try SOQLQuery(parsing: query.soql) == query)
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: "SELECT Id, COUNT() FROM Account") }
        // A field named Count is still a field.
        #expect(try SOQLQuery(parsing: "SELECT Count FROM Account").fields == [.field("Count")])
    }

    @Test("MAX() and MIN() parse among aggregates only, and print back")
    func aggregates() throws {
        let query = try SOQLQuery(
            parsing: "select max(LastModifiedDate), Min(CreatedDate) from Account where Name = 'A'")
        #expect(query.fields == [.aggregate(.max, "LastModifiedDate"), .aggregate(.min, "CreatedDate")])
        #expect(query.isAggregate && !query.isCount)
        #expect(query.soql == "SELECT MAX(LastModifiedDate), MIN(CreatedDate) FROM Account WHERE Name = 'A'")
        #expect(try SOQLQuery(parsing: query.soql) == query)
        // Rewrites that add fields leave an aggregate query alone.
        #expect(query.addingFields(["Id"]) == query)
        let mixed = #expect(throws: SOQLError.self) {
            try SOQLQuery(parsing: "SELECT Id, MAX(Amount) FROM Account")
        }
        #expect(mixed?.message.contains("only aggregates") == true)
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: "SELECT MAX() FROM Account") }
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: "SELECT MAX(Amount FROM Account") }
        // Fields named Max and Min are still fields.
        #expect(
            try SOQLQuery(parsing: "SELECT Max, Min FROM Account").fields == [.field("Max"), .field("Min")])
    }
}
