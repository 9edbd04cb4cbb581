import SOQL
import Testing

@Suite("SOQL mutator, as Mobile Sync uses it")
struct SOQLMutatorTests {
    @Test(
        "is the query ordered by LastModifiedDate (top level only)",
        arguments: [
            ("SELECT Id FROM Account ORDER BY LastModifiedDate", true),
            ("SELECT Id FROM Account ORDER BY lastmodifieddate DESC", true),
            ("SELECT Id FROM Account ORDER BY Name, LastModifiedDate", false),
            ("SELECT Id, (SELECT Id FROM Contacts ORDER BY LastModifiedDate) FROM Account", false),
            ("SELECT Id FROM Account", false),
        ])
    func isOrdered(text: String, expected: Bool) throws {
        #expect(try SOQLQuery(parsing: text).isOrdered(by: "LastModifiedDate") == expected)
    }

    @Test(
        "missing Id and LastModifiedDate are added to the select list",
        arguments: [
            ("SELECT Name FROM Account", "SELECT Name, Id, LastModifiedDate FROM Account"),
            ("SELECT id, Name FROM Account", "SELECT id, Name, LastModifiedDate FROM Account"),
            ("SELECT Id, LastModifiedDate FROM Account", "SELECT Id, LastModifiedDate FROM Account"),
            (
                "SELECT Name, (SELECT Id FROM Contacts) FROM Account",
                "SELECT Name, (SELECT Id FROM Contacts), Id, LastModifiedDate FROM Account"
            ),
        ])
    func addFields(text: String, expected: String) throws {
        #expect(try SOQLQuery(parsing: text).addingFields(["Id", "LastModifiedDate"]).soql == expected)
    }

    @Test(
        "ORDER BY LastModifiedDate is added only when there is no top-level ORDER BY",
        arguments: [
            ("SELECT Id FROM Account", "SELECT Id FROM Account ORDER BY LastModifiedDate"),
            (
                "SELECT Id FROM Account WHERE a = 1 LIMIT 5",
                "SELECT Id FROM Account WHERE a = 1 ORDER BY LastModifiedDate LIMIT 5"
            ),
            ("SELECT Id FROM Account ORDER BY Name", "SELECT Id FROM Account ORDER BY Name"),
            (
                "SELECT Id FROM Account ORDER BY LastModifiedDate DESC",
                "SELECT Id FROM Account ORDER BY LastModifiedDate DESC"
            ),
            (
                "SELECT Id, (SELECT Id FROM Contacts ORDER BY Name) FROM Account",
                "SELECT Id, (SELECT Id FROM Contacts ORDER BY Name) FROM Account ORDER BY LastModifiedDate"
            ),
        ])
    func addOrderBy(text: String, expected: String) throws {
        #expect(try SOQLQuery(parsing: text).addingOrderBy("LastModifiedDate").soql == expected)
    }

    @Test(
        "the time-stamp predicate goes first in WHERE, before ORDER BY and LIMIT",
        arguments: [
            (
                "SELECT Id FROM Account", false,
                "SELECT Id FROM Account WHERE LastModifiedDate > 2024-02-29T12:34:56.789+0000"
            ),
            (
                "SELECT Id FROM Account WHERE a = 1 OR b = 2 ORDER BY LastModifiedDate LIMIT 10", true,
                "SELECT Id FROM Account WHERE LastModifiedDate >= 2024-02-29T12:34:56.789+0000 AND (a = 1 OR b = 2) ORDER BY LastModifiedDate LIMIT 10"
            ),
            (
                "SELECT Id FROM Account WHERE a = 1 AND b = 2", false,
                "SELECT Id FROM Account WHERE LastModifiedDate > 2024-02-29T12:34:56.789+0000 AND (a = 1 AND b = 2)"
            ),
        ])
    func timeStampFilter(text: String, inclusive: Bool, expected: String) throws {
        let query = try SOQLQuery(parsing: text)
            .addingTimeStampFilter(
                field: "LastModifiedDate", milliseconds: 1_709_210_096_789, inclusive: inclusive)
        #expect(query.soql == expected)
        #expect(try SOQLQuery(parsing: query.soql) == query)
    }

    @Test(
        "the remote-id form selects Id, keeps WHERE and LIMIT, drops ORDER BY",
        arguments: [
            (
                "SELECT Name, Industry FROM Account WHERE a = 1 ORDER BY Name LIMIT 50",
                "SELECT Id FROM Account WHERE a = 1 LIMIT 50"
            ),
            ("SELECT Name FROM Account", "SELECT Id FROM Account"),
            (
                "SELECT Name, (SELECT Id FROM Contacts) FROM Account ORDER BY LastModifiedDate DESC",
                "SELECT Id FROM Account"
            ),
        ])
    func idQuery(text: String, expected: String) throws {
        #expect(try SOQLQuery(parsing: text).idQuery.soql == expected)
    }
}
