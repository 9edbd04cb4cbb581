import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Foundation
import Testing

/// The routes besides records: describe, basic information with recent items, layouts and SOSL.
@Suite("describe, recent items, layouts and search")
struct DescribeSearchTests {
    func get(_ client: RESTClient, _ path: String) async throws -> JSONValue {
        try await client.send(.GET, "/services/data/v60.0/" + path, idempotent: true).body
    }

    @Test("describe names the fields with their types, lengths, picklists and relationships")
    func describe() async throws {
        try await withLiveServer { _, client in
            let account = try await get(client, "sobjects/Account/describe")
            #expect(account.value(atPath: "name") == "Account")
            #expect(account.value(atPath: "label") == "Account")
            #expect(account.value(atPath: "keyPrefix") == "001")
            #expect(
                account.value(atPath: "createable") == true && account.value(atPath: "searchable") == true)
            #expect(
                account.value(atPath: "urls.describe") == "/services/data/v60.0/sobjects/Account/describe")
            let fields = Dictionary(
                uniqueKeysWithValues: (account.value(atPath: "fields")?.arrayValue ?? []).map {
                    ($0.value(atPath: "name")?.stringValue ?? "", $0)
                })
            #expect(fields["Name"]?.value(atPath: "label") == "Account Name")
            #expect(fields["Name"]?.value(atPath: "length") == 255)
            #expect(fields["Name"]?.value(atPath: "nillable") == false)
            #expect(fields["Id"]?.value(atPath: "type") == "id")
            #expect(fields["LastModifiedDate"]?.value(atPath: "createable") == false)
            #expect(
                fields["Rating"]?.value(atPath: "picklistValues")?.arrayValue?.first?.value(atPath: "value")
                    == "Hot")
            #expect(fields["ParentId"]?.value(atPath: "referenceTo") == ["Account"])
            let children = account.value(atPath: "childRelationships")?.arrayValue ?? []
            #expect(
                children.contains {
                    $0.value(atPath: "childSObject") == "Contact"
                        && $0.value(atPath: "relationshipName") == "Contacts"
                        && $0.value(atPath: "field") == "AccountId"
                })
            #expect(
                await errorCode { _ = try await get(client, "sobjects/Nothing__c/describe") } == "NOT_FOUND")
        }
    }

    @Test("a describe URL the server does not serve is NOT_FOUND like any unknown resource")
    func unknownDescribeResource() async throws {
        try await withLiveServer { server, _ in
            for method in ["GET", "PATCH"] {
                let reply = try await rawRequest(
                    server, method, "/services/data/v60.0/sobjects/Account/describe/nope",
                    body: method == "PATCH" ? #"{"Name":"x"}"# : nil)
                #expect(reply.status == 404, "\(method)")
                #expect(reply.salesforceErrorCode == "NOT_FOUND", "\(method)")
                let message = reply.json?.arrayValue?.first?.value(atPath: "message")?.stringValue ?? ""
                #expect(message == "The requested resource does not exist", "\(method)")
            }
        }
    }

    @Test(
        "another method on a describe URL is 405 METHOD_NOT_ALLOWED with Allow: GET, HEAD; HEAD answers",
        arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func describeMethodNotAllowed(method: String) async throws {
        try await withLiveServer { server, _ in
            for path in ["sobjects/Account/describe", "sobjects/Contact/describe/layouts"] {
                let reply = try await rawRequest(
                    server, method, "/services/data/v60.0/" + path, body: method == "DELETE" ? nil : "{}")
                #expect(reply.status == 405, "\(method) \(path)")
                #expect(reply.salesforceErrorCode == "METHOD_NOT_ALLOWED", "\(method) \(path)")
                #expect(reply.headers["allow"] == "GET, HEAD", "\(method) \(path)")
            }
            // What the Allow header promises works.
            let head = try await rawRequest(server, "HEAD", "/services/data/v60.0/sobjects/Account/describe")
            #expect(head.status == 200 && head.body.isEmpty)
            // An unknown type stays NOT_FOUND whatever the method.
            let unknown = try await rawRequest(
                server, method, "/services/data/v60.0/sobjects/Nothing__c/describe",
                body: method == "DELETE" ? nil : "{}")
            #expect(unknown.status == 404 && unknown.salesforceErrorCode == "NOT_FOUND")
        }
    }

    @Test("sobjects/TYPE lists records created, changed or read through the API, newest first")
    func recentItems() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 3)  // seeded, not used: not recent
            let first = try await client.create(type: "Account", fields: ["Name": "First"])
            let second = try await client.create(type: "Account", fields: ["Name": "Second"])
            var info = try await get(client, "sobjects/Account")
            #expect(info.value(atPath: "objectDescribe.keyPrefix") == "001")
            #expect(
                info.value(atPath: "recentItems")?.arrayValue?.compactMap {
                    $0.value(atPath: "Id")?.stringValue
                } == [second, first])
            _ = try await client.get(type: "Account", id: first)
            info = try await get(client, "sobjects/Account")
            #expect(info.value(atPath: "recentItems")?.arrayValue?.first?.value(atPath: "Name") == "First")
            try await client.delete(type: "Account", id: first)
            info = try await get(client, "sobjects/Account")
            #expect(info.value(atPath: "recentItems")?.arrayValue?.count == 1)
        }
    }

    @Test("layouts: the UI API's Full and Compact, and describe/layouts")
    func layouts() async throws {
        try await withLiveServer { _, client in
            let compact = try await get(client, "ui-api/layout/Account?layoutType=Compact")
            #expect(compact.value(atPath: "layoutType") == "Compact")
            #expect(compact.value(atPath: "mode") == "View")
            let items =
                compact.value(atPath: "sections")?.arrayValue?.first?.value(atPath: "layoutRows")?.arrayValue?
                .first?.value(atPath: "layoutItems")?.arrayValue ?? []
            #expect(
                items.first?.value(atPath: "layoutComponents")?.arrayValue?.first?.value(atPath: "apiName")
                    == "Name")
            #expect(items.first?.value(atPath: "required") == true)
            let full = try await get(client, "ui-api/layout/Contact")
            #expect(full.value(atPath: "layoutType") == "Full")
            // An empty layoutType is refused like a wrong one, not taken for Full.
            for query in ["?layoutType=Huge", "?layoutType=", "?layoutType", "?mode=View&layoutType="] {
                #expect(
                    await errorCode { _ = try await get(client, "ui-api/layout/Contact" + query) }
                        == "INVALID_PARAMETER_VALUE", "\(query)")
            }
            #expect(
                try await get(client, "ui-api/layout/Contact?layoutType=Compact").value(atPath: "layoutType")
                    == "Compact")
            let described = try await get(client, "sobjects/Account/describe/layouts")
            #expect(
                described.value(atPath: "layouts")?.arrayValue?.first?.value(atPath: "detailLayoutSections")?
                    .arrayValue?
                    .isEmpty == false)
        }
    }

    @Test("SOSL: FIND in name or all fields, RETURNING with fields, filters and limits, OR and prefixes")
    func search() async throws {
        try await withLiveServer { _, client in
            let acme = try await client.create(
                type: "Account", fields: ["Name": "Acme Rockets", "Description": "makes rockets"])
            _ = try await client.create(
                type: "Account", fields: ["Name": "Globex", "Description": "acme's rival"])
            _ = try await client.create(type: "Contact", fields: ["LastName": "Acme", "FirstName": "Wile"])
            func ids(_ sosl: String) async throws -> [String] {
                let encoded = sosl.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                return try await get(client, "search?q=" + encoded).value(atPath: "searchRecords")?
                    .arrayValue?
                    .compactMap { $0.value(atPath: "Id")?.stringValue } ?? []
            }
            let named = try await get(
                client,
                "search?q=" + "find {acme} in NAME FIELDS returning  Account(Id, Name, Description)"
                    .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            let records = named.value(atPath: "searchRecords")?.arrayValue ?? []
            #expect(records.count == 1)
            #expect(records.first?.value(atPath: "attributes.type") == "Account")
            #expect(records.first?.value(atPath: "Name") == "Acme Rockets")
            #expect(records.first?.value(atPath: "Description") == "makes rockets")
            // ALL FIELDS (the default) searches descriptions too; no RETURNING: every type, Id only.
            #expect(try await ids("FIND {acme}").count == 3)
            #expect(try await ids("FIND {acme} RETURNING Account").count == 2)
            #expect(try await ids("FIND {acme} RETURNING Account(Id WHERE Name LIKE 'G%')").count == 1)
            #expect(try await ids("FIND {acme} RETURNING Account(Id ORDER BY Name LIMIT 1)") == [acme])
            #expect(try await ids("FIND {Glob*} IN NAME FIELDS RETURNING Account").count == 1)
            #expect(try await ids("FIND {rockets OR globex} IN NAME FIELDS RETURNING Account").count == 2)
            #expect(try await ids("FIND {nothing}").isEmpty)
            #expect(try await ids("FIND {acme} LIMIT 1").count == 1)
            for (sosl, code) in [
                ("SEARCH {acme}", "MALFORMED_SEARCH"), ("FIND acme", "MALFORMED_SEARCH"),
                ("FIND {a}", "INVALID_SEARCH"),
                ("FIND {acme} RETURNING Nothing__c", "INVALID_TYPE"),
                ("FIND {acme} RETURNING Account(Nope__c)", "INVALID_FIELD"),
                ("FIND {acme} IN SOME FIELDS", "MALFORMED_SEARCH"),
            ] {
                #expect(await errorCode { _ = try await ids(sosl) } == code, "\(sosl)")
            }
        }
    }

    @Test("SOSL: ORDER BY, LIMIT and OFFSET inside RETURNING answer as the same SOQL does")
    func searchOrder() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 12)
            func names(_ sosl: String) async throws -> [String] {
                let encoded = sosl.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                return try await get(client, "search?q=" + encoded).value(atPath: "searchRecords")?
                    .arrayValue?
                    .compactMap { $0.value(atPath: "Name")?.stringValue } ?? []
            }
            func soql(_ query: String) async throws -> [String] {
                try await client.queryFirstPage(query).records.compactMap { $0["Name"]?.stringValue }
            }
            let descending = try await names(
                "FIND {Account} RETURNING Account(Id, Name ORDER BY Name DESC LIMIT 5)")
            #expect(descending == ["Account 9", "Account 8", "Account 7", "Account 6", "Account 5"])
            #expect(try await soql("SELECT Name FROM Account ORDER BY Name DESC LIMIT 5") == descending)
            // The type's LIMIT and OFFSET count matching records, in the type's order.
            let page = try await names(
                "FIND {Account} RETURNING Account(Name WHERE Name LIKE 'Account 1%' ORDER BY Name DESC LIMIT 2 OFFSET 1)"
            )
            #expect(page == ["Account 11", "Account 10"])
            #expect(
                try await soql(
                    "SELECT Name FROM Account WHERE Name LIKE 'Account 1%' ORDER BY Name DESC LIMIT 2 OFFSET 1"
                )
                    == page)
            #expect(
                try await names("FIND {Account} RETURNING Account(Name ORDER BY Name LIMIT 3)")
                    == ["Account 1", "Account 10", "Account 11"])
        }
    }
    @Test("issue 53: a type repeated 1,000 times in RETURNING is refused at once; long SOQL chains answer")
    func boundedQueries() async throws {
        try await withLiveServer { _, client in
            _ = try await client.adminSeed(type: "Account", count: 5)
            let repeated =
                "FIND {Account} RETURNING "
                + Array(repeating: "Account", count: 1_000).joined(separator: ", ")
            let encoded = repeated.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            #expect(
                await errorCode { _ = try await get(client, "search?q=" + encoded) } == "MALFORMED_SEARCH")
            // 500 ORs: a flat chain for SQLite, not 500 nested parentheses.
            let ors =
                "SELECT Name FROM Account WHERE "
                + (0..<501).map { "Name = 'Account \($0)'" }.joined(separator: " OR ")
            #expect(try await client.queryFirstPage(ors).records.count == 5)
            #expect(
                await errorCode { _ = try await client.queryFirstPage(ors + " OR Name = 'x'") }
                    == "MALFORMED_QUERY")
            // A field ordered by 3,000 times is one ORDER BY term (SQLite takes at most 2,000).
            let order =
                "SELECT Name FROM Account ORDER BY "
                + Array(repeating: "Name DESC", count: 3_000).joined(separator: ", ")
            #expect(try await client.queryFirstPage(order).records.first?["Name"] == "Account 5")
        }
    }
}
