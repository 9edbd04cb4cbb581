import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Foundation
import Testing

/// What the server answers, shaped as Salesforce answers it: versions, errors, field rules, relationships, schemas.
@Suite("Salesforce's answers")
struct SalesforceShapeTests {
    @Test("every version v31.0-v62.0 is routed and listed; others are NOT_FOUND; URLs keep the version asked")
    func versions() async throws {
        try await withLiveServer { _, client in
            let listing =
                try await client.send(.GET, "/services/data/", idempotent: true).body.arrayValue ?? []
            #expect(listing.count == 32)
            #expect(listing.first?.value(atPath: "version") == "31.0")
            #expect(listing.first?.value(atPath: "label") == "Summer '14")
            #expect(
                listing.first { $0.value(atPath: "version") == "60.0" }?.value(atPath: "label")
                    == "Spring '24")
            #expect(listing.last?.value(atPath: "label") == "Winter '25")
            #expect(listing.last?.value(atPath: "url") == "/services/data/v62.0")
            _ = try await client.adminSeed(type: "Account", count: 5)
            var old = client
            old.apiPath = "/services/data/v45.0"
            let page = try await old.queryFirstPage("SELECT Id, Name FROM Account", batchSize: 2)
            #expect(page.nextRecordsUrl?.hasPrefix("/services/data/v45.0/query/") == true)
            let raw = try await old.send(
                .GET, "/services/data/v45.0/query?q=SELECT+Id+FROM+Account", idempotent: true
            ).body
            #expect(
                raw.value(atPath: "records")?.arrayValue?.first?.value(atPath: "attributes.url")?.stringValue?
                    .hasPrefix("/services/data/v45.0/sobjects/Account/") == true)
            for version in ["v30.0", "v63.0", "v60", "latest"] {
                var other = client
                other.apiPath = "/services/data/\(version)"
                let code = await errorCode { _ = try await other.queryFirstPage("SELECT Id FROM Account") }
                #expect(code == "NOT_FOUND", "\(version)")
            }
        }
    }

    @Test("the last page of a query can be fetched again; an expired locator is INVALID_QUERY_LOCATOR")
    func lastPageAgain() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 5)
            let first = try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 3)
            let next = try #require(first.nextRecordsUrl)
            let last = try await client.queryNextPage(next)
            #expect(last.done)
            let again = try await client.queryNextPage(next)
            #expect(again.records == last.records)
            #expect(again.records.count == 2)
        }
        let server = try await ReferenceServer.start(
            .init(token: "t", locatorLifetime: .zero), logger: quietLogger())
        let client = RESTClient(baseURL: server.url, token: "t", retry: .none)
        _ = try await client.adminSeed(type: "Account", count: 5)
        let first = try await client.queryFirstPage("SELECT Id FROM Account", batchSize: 3)
        let code = await errorCode { _ = try await client.queryNextPage(first.nextRecordsUrl ?? "") }
        #expect(code == "INVALID_QUERY_LOCATOR")
        await server.stop()
    }

    @Test("NOT_FOUND for an id never there, ENTITY_IS_DELETED for one deleted")
    func notFoundVersusDeleted() async throws {
        try await withLiveServer { _, client in
            let id = try await client.create(type: "Account", fields: ["Name": "Gone soon"])
            let never = "001" + String(repeating: "0", count: 11) + "ZZZZ"
            #expect(await errorCode { try await client.delete(type: "Account", id: never) } == "NOT_FOUND")
            try await client.delete(type: "Account", id: id)
            #expect(
                await errorCode { try await client.delete(type: "Account", id: id) } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    try await client.update(type: "Account", id: id, fields: ["Name": "back?"])
                } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/\(id)", idempotent: true)
                } == "ENTITY_IS_DELETED")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/\(never)", idempotent: true)
                } == "NOT_FOUND")
        }
    }

    @Test("a record by external id, and ?fields= on a record GET")
    func externalIdAndFields() async throws {
        try await withLiveServer { _, client in
            let (id, _) = try await client.upsert(
                type: "Account", field: "Ext__c", value: "ext-1",
                fields: ["Name": "Acme", "Industry": "Energy"])
            let byExternal = try await client.send(
                .GET, "\(client.apiPath)/sobjects/Account/Ext__c/ext-1", idempotent: true
            ).body
            #expect(byExternal.value(atPath: "Id")?.stringValue == id)
            #expect(byExternal.value(atPath: "Name") == "Acme")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/Ext__c/nobody", idempotent: true)
                } == "NOT_FOUND")
            let some =
                try await client.send(
                    .GET, "\(client.apiPath)/sobjects/Account/\(id)?fields=name,Industry", idempotent: true
                ).body.objectValue ?? [:]
            #expect(Set(some.keys) == ["Name", "Industry", "attributes"])
            #expect(some["Name"] == "Acme")
            #expect(
                await errorCode {
                    _ = try await client.send(
                        .GET, "\(client.apiPath)/sobjects/Account/\(id)?fields=Name,Nope__c", idempotent: true
                    )
                } == "INVALID_FIELD")
        }
    }

    @Test("SELECT COUNT() answers the count in totalSize and no records; COUNT() with other items is refused")
    func count() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 7)
            let all = try await client.queryFirstPage("SELECT COUNT() FROM Account")
            #expect(all.totalSize == 7 && all.records.isEmpty && all.done)
            let some = try await client.queryFirstPage("SELECT count() FROM Account LIMIT 3")
            #expect(some.totalSize == 3)
            #expect(
                await errorCode { _ = try await client.queryFirstPage("SELECT COUNT(), Id FROM Account") }
                    == "MALFORMED_QUERY")
        }
    }

    @Test(
        "MAX() and MIN() answer one AggregateResult row, date-times as the API writes them, null over no records"
    )
    func aggregates() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 5)
            let ordered = try await client.queryFirstPage(
                "SELECT Name, LastModifiedDate FROM Account ORDER BY LastModifiedDate")
            let page = try await client.queryFirstPage(
                "SELECT MAX(LastModifiedDate), MIN(Name), MAX(Name) FROM Account")
            #expect(page.totalSize == 1 && page.done && page.records.count == 1)
            let row = try #require(page.records.first)
            let raw = try await client.send(
                .GET, "/services/data/v60.0/query?q=SELECT+MAX(Name)+FROM+Account", idempotent: true
            ).body
            #expect(
                raw.value(atPath: "records")?.arrayValue?.first?.value(atPath: "attributes")
                    == ["type": "AggregateResult"])
            #expect(row["expr0"] == ordered.records.last?["LastModifiedDate"])
            #expect(row["expr1"] == "Account 1")
            #expect(row["expr2"] == "Account 5")
            // No record matches: still one row, its aggregates null.
            let none = try await client.queryFirstPage(
                "SELECT MAX(LastModifiedDate) FROM Account WHERE Name = 'nobody'")
            #expect(none.totalSize == 1 && none.records.first?["expr0"] == .null)
            #expect(try await client.queryFirstPage("SELECT MAX(Name) FROM Account LIMIT 0").totalSize == 0)
            for soql in [
                "SELECT MAX(Name) FROM Account ORDER BY Name", "SELECT MAX(Name), Id FROM Account",
                "SELECT Id, (SELECT MAX(LastName) FROM Contacts) FROM Account",
            ] {
                #expect(
                    await errorCode { _ = try await client.queryFirstPage(soql) } == "MALFORMED_QUERY",
                    "\(soql)")
            }
            #expect(
                await errorCode { _ = try await client.queryFirstPage("SELECT MAX(Nope__c) FROM Account") }
                    == "INVALID_FIELD")
        }
    }

    @Test(
        "parent fields nest under the relationship with attributes; child subqueries nest as a query result")
    func relationships() async throws {
        try await withLiveServer { _, client in
            let owner = try await client.create(
                type: "User", fields: ["Name": "Olga Owner", "Email": "o@x.org"])
            let accounts = try await client.adminSeed(
                type: "Account", count: 2, fields: ["OwnerId": .string(owner)])
            let unowned = try await client.create(type: "Account", fields: ["Name": "Nobody's"])
            _ = try await client.create(
                type: "Contact", fields: ["LastName": "Zed", "AccountId": .string(accounts[0])])
            _ = try await client.create(
                type: "Contact", fields: ["LastName": "Abe", "AccountId": .string(accounts[0])])
            _ = try await client.create(type: "Contact", fields: ["LastName": "Solo"])

            let page = try await client.queryFirstPage(
                "SELECT Id, Owner.Name, (SELECT Id, LastName FROM Contacts ORDER BY LastName) FROM Account ORDER BY Name"
            )
            #expect(page.totalSize == 3)
            let byId = Dictionary(
                uniqueKeysWithValues: page.records.map { ($0["Id"]?.stringValue ?? "", $0) })
            let first = try #require(byId[accounts[0]])
            // The client keeps no top-level attributes.
            #expect(Set(first.keys) == ["Id", "Owner", "Contacts"])
            let ownerObject = JSONValue.object([
                "attributes": [
                    "type": "User", "url": .string("/services/data/v60.0/sobjects/User/\(owner)"),
                ],
                "Name": "Olga Owner",
            ])
            #expect(first["Owner"] == ownerObject)
            let contacts = try #require(first["Contacts"])
            #expect(contacts.value(atPath: "totalSize") == 2)
            #expect(contacts.value(atPath: "done") == true)
            let children = contacts.value(atPath: "records")?.arrayValue ?? []
            #expect(children.map { $0.value(atPath: "LastName") } == ["Abe", "Zed"])
            #expect(children.first?.value(atPath: "attributes.type") == "Contact")
            #expect(Set(children.first?.objectValue?.keys ?? [:].keys) == ["attributes", "Id", "LastName"])
            // No children, and an empty lookup: null, as Salesforce answers.
            #expect(byId[accounts[1]]?["Contacts"] == .null)
            #expect(byId[unowned]?["Owner"] == .null)

            // Two levels up, WHERE and ORDER BY through a relationship, and the type's own name.
            let deep = try await client.queryFirstPage(
                "SELECT LastName, Account.Name, Account.Owner.Email FROM Contact WHERE Account.Owner.Name = 'Olga Owner' ORDER BY Account.Name, LastName"
            )
            #expect(deep.records.map { $0["LastName"] } == ["Abe", "Zed"])
            #expect(
                deep.records.first.map(JSONValue.object)?.value(atPath: "Account.Owner.Email") == "o@x.org")
            #expect(deep.records.first.map(JSONValue.object)?.value(atPath: "Account.Name") == "Account 1")
            #expect(
                deep.records.first.map(JSONValue.object)?.value(atPath: "Account.attributes.type")
                    == "Account")
            let own = try await client.queryFirstPage(
                "SELECT Account.Name FROM Account WHERE Account.Name = 'Account 2'")
            #expect(own.records.map { $0["Name"] } == ["Account 2"])
        }
    }

    @Test("unknown names: INVALID_FIELD and INVALID_TYPE in queries, INVALID_FIELD and NOT_FOUND on writes")
    func unknownNames() async throws {
        try await withLiveServer { _, client in
            let id = try await client.create(type: "Account", fields: ["Name": "Acme"])
            let queries: [(String, String)] = [
                ("SELECT Id, NoSuchField__c FROM Account", "INVALID_FIELD"),
                ("SELECT Id FROM Account WHERE NoSuchField__c = 1", "INVALID_FIELD"),
                ("SELECT Id FROM Account ORDER BY NoSuchField__c", "INVALID_FIELD"),
                ("SELECT Id, Nobody.Name FROM Account", "INVALID_FIELD"),
                ("SELECT Id, Owner.NoSuchField__c FROM Account", "INVALID_FIELD"),
                ("SELECT Id, (SELECT Id, Nope__c FROM Contacts) FROM Account", "INVALID_FIELD"),
                ("SELECT Id FROM NoSuchObject", "INVALID_TYPE"),
                ("SELECT COUNT() FROM NoSuchObject", "INVALID_TYPE"),
                ("SELECT Id, (SELECT Id FROM Nothings) FROM Account", "INVALID_TYPE"),
                (
                    "SELECT Id, (SELECT Id, (SELECT Id FROM Contacts) FROM Contacts) FROM Account",
                    "MALFORMED_QUERY"
                ),
            ]
            for (soql, expected) in queries {
                let code = await errorCode { _ = try await client.queryFirstPage(soql) }
                #expect(code == expected, "\(soql)")
            }
            let writes: [(String, () async throws -> Void)] = [
                ("INVALID_FIELD", { _ = try await client.create(type: "Account", fields: ["Nope__c": "x"]) }),
                (
                    "INVALID_FIELD",
                    { try await client.update(type: "Account", id: id, fields: ["Nope__c": "x"]) }
                ),
                ("NOT_FOUND", { _ = try await client.create(type: "NoSuchObject", fields: ["Name": "x"]) }),
                (
                    "NOT_FOUND",
                    {
                        _ = try await client.upsert(
                            type: "Account", field: "Nope__c", value: "1", fields: [:])
                    }
                ),
                (
                    "JSON_PARSER_ERROR",
                    { _ = try await client.create(type: "Account", fields: ["NumberOfEmployees": "many"]) }
                ),
                (
                    "INVALID_FIELD_FOR_INSERT_UPDATE",
                    {
                        _ = try await client.create(
                            type: "Account", fields: ["CreatedDate": "2024-01-01T00:00:00Z"])
                    }
                ),
            ]
            for (expected, write) in writes {
                #expect(await errorCode(write) == expected)
            }
            let composite = try await client.compositeCreate(type: "NoSuchObject", records: [["Name": "x"]])
            #expect(composite.first?.errorCode == "INVALID_TYPE")
            // Names are case-insensitive and stored in their declared case.
            let lower = try await client.create(type: "account", fields: ["name": "lower"])
            let stored = try #require(try await client.get(type: "Account", id: lower))
            #expect(stored["Name"] == "lower")
        }
    }

    @Test(
        "field rules: required fields, lengths and restricted picklists are refused with Salesforce's codes, per record in composite"
    )
    func fieldRules() async throws {
        let schema = try ServerSchema(json: [
            "objects": [
                [
                    "name": "Ticket__c",
                    "fields": [
                        ["name": "Subject__c", "required": true, "length": 10, "label": "Subject"],
                        [
                            "name": "Priority__c", "type": "picklist", "picklistValues": ["High", "Low"],
                            "restrictedPicklist": true,
                        ],
                        ["name": "Mood__c", "type": "picklist", "picklistValues": ["Calm"]],
                    ],
                ]
            ]
        ])
        let server = try await ReferenceServer.start(.init(token: "t", schema: schema), logger: quietLogger())
        let client = RESTClient(baseURL: server.url, token: "t", retry: .none)
        do {
            func refusal(_ body: () async throws -> Void) async -> (String?, String?) {
                do {
                    try await body()
                    return (nil, nil)
                } catch let error as RESTError {
                    return (error.errorCode, error.message)
                } catch {
                    return ("\(error)", nil)
                }
            }
            var (code, message) = await refusal { _ = try await client.create(type: "Account", fields: [:]) }
            #expect(code == "REQUIRED_FIELD_MISSING" && message == "Required fields are missing: [Name]")
            (code, message) = await refusal {
                _ = try await client.create(type: "Account", fields: ["Name": ""])
            }
            #expect(code == "REQUIRED_FIELD_MISSING")
            (code, message) = await refusal {
                _ = try await client.create(
                    type: "Account", fields: ["Name": .string(String(repeating: "x", count: 256))])
            }
            #expect(
                code == "STRING_TOO_LONG"
                    && message?.hasPrefix("Account Name: data value too large: xxx") == true)
            #expect(message?.hasSuffix("(max length=255)") == true)
            (code, message) = await refusal {
                _ = try await client.create(type: "Contact", fields: ["FirstName": "Ann"])
            }
            #expect(code == "REQUIRED_FIELD_MISSING" && message == "Required fields are missing: [LastName]")

            let ticket = try await client.create(
                type: "Ticket__c", fields: ["Subject__c": "Printer", "Mood__c": "Stormy"])
            (code, message) = await refusal {
                try await client.update(type: "Ticket__c", id: ticket, fields: ["Subject__c": .null])
            }
            #expect(code == "REQUIRED_FIELD_MISSING")
            (code, message) = await refusal {
                try await client.update(
                    type: "Ticket__c", id: ticket, fields: ["Subject__c": "Printer on fire"])
            }
            #expect(code == "STRING_TOO_LONG" && message?.hasPrefix("Subject: data value too large") == true)
            (code, message) = await refusal {
                try await client.update(type: "Ticket__c", id: ticket, fields: ["Priority__c": "Urgent"])
            }
            #expect(code == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST")
            #expect(message == "Priority: bad value for restricted picklist field: Urgent")
            try await client.update(type: "Ticket__c", id: ticket, fields: ["Priority__c": "High"])

            // Composite answers each record on its own.
            let results = try await client.compositeCreate(
                type: "Ticket__c",
                records: [
                    ["Subject__c": "Ok"], ["Priority__c": "Low"], ["Subject__c": "Ok", "Priority__c": "Meh"],
                ])
            #expect(results.map(\.success) == [true, false, false])
            #expect(
                results.map(\.errorCode) == [
                    nil, "REQUIRED_FIELD_MISSING", "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
                ])
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        for bad: JSONValue in [
            ["name": "X__c", "length": 0], ["name": "X__c", "required": "yes"],
            ["name": "X__c", "picklistValues": ["a"]],
            ["name": "X__c", "type": "picklist", "picklistValues": [1]],
            ["name": "X__c", "restrictedPicklist": true], ["name": "X__c", "label": ""],
        ] {
            #expect(throws: SalesforceError.self, "\(bad)") {
                try ServerSchema(json: ["objects": [["name": "Thing__c", "fields": [bad]]]])
            }
        }
    }

    @Test("a schema from a file and from /admin/seed adds types, fields and relationships")
    func schemaExtension() async throws {
        let temp = try TemporaryDirectory()
        let file = temp.path + "/schema.json"
        try #"""
        {"objects": [{"name": "Invoice__c", "fields": [
            {"name": "Amount__c", "type": "currency"},
            {"name": "Account__c", "type": "reference", "referenceTo": "Account",
             "childRelationshipName": "Invoices__r"}]}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        let schema = try ServerSchema(contentsOfFile: file)
        let server = try await ReferenceServer.start(.init(token: "t", schema: schema), logger: quietLogger())
        let client = RESTClient(baseURL: server.url, token: "t", retry: .none)
        do {
            let account = try await client.create(type: "Account", fields: ["Name": "Acme"])
            _ = try await client.create(
                type: "Invoice__c",
                fields: ["Name": "INV-1", "Amount__c": 12.5, "Account__c": .string(account)])
            let page = try await client.queryFirstPage(
                "SELECT Name, (SELECT Amount__c FROM Invoices__r) FROM Account")
            #expect(
                page.records.first.map(JSONValue.object)?.value(atPath: "Invoices__r.records")?.arrayValue?
                    .first?.value(atPath: "Amount__c") == 12.5)
            let invoice = try await client.queryFirstPage("SELECT Account__r.Name FROM Invoice__c")
            #expect(invoice.records.first.map(JSONValue.object)?.value(atPath: "Account__r.Name") == "Acme")

            // /admin/seed declares a new type with its template's fields, and takes a schema.
            _ = try await client.adminSeed(
                type: "Gadget__c", count: 3, fields: ["Color__c": "red"],
                schema: [
                    "objects": [["name": "Gadget__c", "fields": [["name": "Weight__c", "type": "double"]]]]
                ])
            let gadgets = try await client.queryFirstPage(
                "SELECT Name, Color__c, Weight__c, Number__c FROM Gadget__c")
            #expect(gadgets.totalSize == 3)
            #expect(gadgets.records.first?["Color__c"] == "red")
            #expect(gadgets.records.first?["Weight__c"] == .null)
            #expect(
                await errorCode { _ = try await client.queryFirstPage("SELECT Size__c FROM Gadget__c") }
                    == "INVALID_FIELD")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        #expect(throws: SalesforceError.self) {
            try ServerSchema(json: ["objects": [["name": "Bad", "fields": [["name": "X", "type": "blob"]]]]])
        }
    }
}
