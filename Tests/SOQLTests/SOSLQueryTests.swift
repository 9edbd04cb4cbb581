import SOQL
import Testing

/// Issue 53: a SOSL search is parsed in time linear in its text, and a type named twice in
/// RETURNING is refused, as Salesforce refuses it; a SOQL query joins at most 500 conditions.
@Suite("SOSL parse, and bounds on what a query may ask")
struct SOSLQueryTests {
    @Test("a search parses into its term, scope, types and limit")
    func parses() throws {
        let search = try SOSLQuery(
            parsing:
                "find {Acme\\} Co*} in NAME fields RETURNING Account(Id, Name WHERE Name != null LIMIT 5), Contact LIMIT 20"
        )
        #expect(search.term == "Acme\\} Co*")
        #expect(search.scope == .name)
        #expect(search.returning.map(\.object) == ["Account", "Contact"])
        #expect(search.returning.first?.limit == 5)
        #expect(search.returning.last?.fields == [.field("Id")])
        #expect(search.limit == 20)
    }

    @Test(
        "what is not a search is refused with where",
        arguments: [
            ("not a search", "expected FIND"), ("FIND acme", "enclosed in braces"),
            ("FIND {acme", "not closed"), ("FIND {acme} IN SOME FIELDS", "ALL, NAME, EMAIL or PHONE"),
            ("FIND {acme} RETURNING Account(Id", "not closed"),
            ("FIND {acme} RETURNING Account(FROM)", "in RETURNING Account"),
            ("FIND {acme} RETURNING Account, Contact, account(Id)", "each object must be distinct"),
            ("FIND {acme} LIMIT x", "a number after LIMIT"), ("FIND {acme} trailing", "unexpected text"),
        ])
    func refused(text: String, says: String) {
        #expect {
            try SOSLQuery(parsing: text)
        } throws: { error in
            (error as? SOQLError)?.message.contains(says) == true
        }
    }

    @Test("a type repeated 1,000 times in RETURNING is refused at its second mention")
    func repeatedType() {
        let text =
            "FIND {acme} RETURNING " + Array(repeating: "Account", count: 1_000).joined(separator: ", ")
        #expect {
            try SOSLQuery(parsing: text)
        } throws: { error in
            let error = error as? SOQLError
            return error?.message.contains("Account is named twice") == true && error?.position == 31
        }
        // 1,000 distinct types parse.
        let distinct = "FIND {acme} RETURNING " + (0..<1_000).map { "T\($0)__c" }.joined(separator: ", ")
        #expect((try? SOSLQuery(parsing: distinct))?.returning.count == 1_000)
    }

    @Test("a query joins at most 500 conditions with AND and OR; more is refused, not a deep tree")
    func logicalOperators() throws {
        func query(_ count: Int, _ connective: String) -> String {
            "SELECT Id FROM Account WHERE "
                + (0..<count).map { "Name = 'a\($0)'" }.joined(separator: " \(connective) ")
        }
        #expect((try? SOQLQuery(parsing: query(501, "OR"))) != nil)
        #expect(
            (try? SOQLQuery(parsing: query(251, "AND") + " OR (" + query(250, "OR").dropFirst(29) + ")"))
                != nil)
        for connective in ["OR", "AND"] {
            #expect {
                try SOQLQuery(parsing: query(502, connective))
            } throws: { error in
                (error as? SOQLError)?.message.contains("more than 500 ANDs and ORs") == true
            }
        }
        // Counted across parentheses and subqueries.
        let nested = query(300, "OR") + " AND (" + query(202, "AND").dropFirst(29) + ")"
        #expect(throws: SOQLError.self) { try SOQLQuery(parsing: nested) }
    }
}
