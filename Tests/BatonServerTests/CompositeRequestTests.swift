import BatonJSON
import BatonREST
import BatonServer
import BatonTestSupport
import Testing

/// `POST composite`: ordered subrequests with references, per-subrequest answers, allOrNone;
/// and the parent-child rules it relies on (cascade delete, writes linking a deleted parent).
@Suite("composite requests")
struct CompositeRequestTests {
    func composite(_ client: RESTClient, _ requests: [JSONValue], allOrNone: Bool = false) async throws
        -> [JSONValue]
    {
        let body: JSONValue = ["allOrNone": .bool(allOrNone), "compositeRequest": .array(requests)]
        let reply = try await client.send(
            .POST, "/services/data/v60.0/composite", body: body, idempotent: false)
        return reply.body.value(atPath: "compositeResponse")?.arrayValue ?? []
    }

    static func request(_ method: String, _ path: String, _ ref: String, _ body: JSONValue? = nil)
        -> JSONValue
    {
        var object: JSONObject = [
            "method": .string(method), "url": .string("/services/data/v60.0/\(path)"),
            "referenceId": .string(ref),
        ]
        if let body { object["body"] = body }
        return .object(object)
    }

    @Test("a parent and its children created in one call, the children linked through @{ref.id}")
    func references() async throws {
        try await withLiveServer { _, client in
            let answers = try await composite(
                client,
                [
                    Self.request("POST", "sobjects/Account", "local_1", ["Name": "Acme"]),
                    Self.request(
                        "POST", "sobjects/Contact", "local_2",
                        ["LastName": "Ann", "AccountId": "@{local_1.id}"]),
                    Self.request(
                        "PATCH", "sobjects/Contact/BatonExternalId__c/ext-3", "local_3",
                        ["LastName": "Bob", "AccountId": "@{local_1.id}"]),
                    Self.request("GET", "sobjects/Contact/@{local_2.id}", "read"),
                ])
            #expect(answers.map { $0.value(atPath: "httpStatusCode") } == [201, 201, 201, 200])
            #expect(
                answers.map { $0.value(atPath: "referenceId") } == ["local_1", "local_2", "local_3", "read"])
            let accountId = try #require(answers[0].value(atPath: "body.id")?.stringValue)
            #expect(
                answers[0].value(atPath: "httpHeaders.Location")?.stringValue?.hasSuffix(accountId) == true)
            #expect(answers[2].value(atPath: "body.created") == true)
            #expect(answers[3].value(atPath: "body.AccountId") == .string(accountId))
            // Updates and deletes answer 204 with no body.
            let changed = try await composite(
                client,
                [
                    Self.request("PATCH", "sobjects/Account/\(accountId)", "upd", ["Name": "Acme 2"]),
                    Self.request(
                        "PATCH", "sobjects/Contact/BatonExternalId__c/ext-3", "again", ["LastName": "Robert"]),
                ])
            #expect(changed.map { $0.value(atPath: "httpStatusCode") } == [204, 200])
            #expect(changed[0].value(atPath: "body") == .null)
        }
    }

    @Test("a failure stops only what refers to it; with allOrNone everything rolls back")
    func failures() async throws {
        try await withLiveServer { _, client in
            let answers = try await composite(
                client,
                [
                    Self.request("POST", "sobjects/Account", "bad", ["Description": "no name"]),
                    Self.request(
                        "POST", "sobjects/Contact", "child", ["LastName": "Ann", "AccountId": "@{bad.id}"]),
                    Self.request("POST", "sobjects/Account", "good", ["Name": "Fine"]),
                ])
            #expect(answers.map { $0.value(atPath: "httpStatusCode") } == [400, 400, 201])
            #expect(
                answers[0].value(atPath: "body")?.arrayValue?.first?.value(atPath: "errorCode")
                    == "REQUIRED_FIELD_MISSING")
            #expect(
                answers[1].value(atPath: "body")?.arrayValue?.first?.value(atPath: "errorCode")
                    == "PROCESSING_HALTED")
            #expect(try await client.adminRecords(type: "Account").count == 1)

            let rolledBack = try await composite(
                client,
                [
                    Self.request("POST", "sobjects/Account", "first", ["Name": "Kept?"]),
                    Self.request(
                        "POST", "sobjects/Account", "second",
                        ["Name": .string(String(repeating: "x", count: 300))]),
                ], allOrNone: true)
            #expect(rolledBack.map { $0.value(atPath: "httpStatusCode") } == [400, 400])
            #expect(
                rolledBack[0].value(atPath: "body")?.arrayValue?.first?.value(atPath: "errorCode")
                    == "PROCESSING_HALTED")
            #expect(
                rolledBack[1].value(atPath: "body")?.arrayValue?.first?.value(atPath: "errorCode")
                    == "STRING_TOO_LONG")
            #expect(try await client.adminRecords(type: "Account").count == 1)

            let tooMany = (0..<26).map { Self.request("POST", "sobjects/Account", "r\($0)", ["Name": "n"]) }
            await #expect(throws: RESTError.self) { _ = try await composite(client, tooMany) }
        }
    }

    @Test("deleting an account deletes its contacts; a write linking a deleted account is ENTITY_IS_DELETED")
    func parentRules() async throws {
        try await withLiveServer { _, client in
            let account = try await client.create(type: "Account", fields: ["Name": "Acme"])
            let contact = try await client.create(
                type: "Contact", fields: ["LastName": "Ann", "AccountId": .string(account)])
            let other = try await client.create(type: "Contact", fields: ["LastName": "Solo"])
            try await client.delete(type: "Account", id: account)
            #expect(try await client.get(type: "Contact", id: contact) == nil)
            #expect(try await client.get(type: "Contact", id: other) != nil)
            let answers = try await composite(
                client,
                [
                    Self.request(
                        "POST", "sobjects/Contact", "c1", ["LastName": "Late", "AccountId": .string(account)]),
                    Self.request("PATCH", "sobjects/Contact/\(other)", "c2", ["AccountId": .string(account)]),
                    Self.request("PATCH", "sobjects/Contact/\(contact)", "c3", ["LastName": "Gone"]),
                ])
            #expect(
                answers.map { $0.value(atPath: "body")?.arrayValue?.first?.value(atPath: "errorCode") }
                    == ["ENTITY_IS_DELETED", "ENTITY_IS_DELETED", "ENTITY_IS_DELETED"])
            #expect(answers.map { $0.value(atPath: "httpStatusCode") } == [400, 400, 404])
        }
    }

    @Test(
        "ENTITY_IS_DELETED names the lookup when a write links a deleted record, no field when the record is deleted"
    )
    func deletedShapes() async throws {
        try await withLiveServer { _, client in
            let account = try await client.create(type: "Account", fields: ["Name": "Acme"])
            let gone = try await client.create(type: "Contact", fields: ["LastName": "Gone"])
            let other = try await client.create(type: "Contact", fields: ["LastName": "Solo"])
            try await client.delete(type: "Account", id: account)
            try await client.delete(type: "Contact", id: gone)
            // A composite subrequest answers as the single-record call: a Salesforce error array
            // whose elements carry errorCode, message and fields.
            let answers = try await composite(
                client,
                [
                    Self.request(
                        "PATCH", "sobjects/Contact/\(other)", "link", ["AccountId": .string(account)]),
                    Self.request("PATCH", "sobjects/Contact/\(gone)", "record", ["LastName": "Back"]),
                ])
            #expect(answers.map { $0.value(atPath: "httpStatusCode") } == [400, 404])
            #expect(
                answers[0].value(atPath: "body")
                    == [
                        [
                            "errorCode": "ENTITY_IS_DELETED", "message": "entity is deleted",
                            "fields": ["AccountId"],
                        ]
                    ])
            #expect(
                answers[1].value(atPath: "body")
                    == [["errorCode": "ENTITY_IS_DELETED", "message": "entity is deleted", "fields": []]])
            // sObject Collections: per-record results, with no id when the record failed.
            let reply = try await client.send(
                .PATCH, "/services/data/v60.0/composite/sobjects",
                body: [
                    "allOrNone": false,
                    "records": [
                        [
                            "attributes": ["type": "Contact"], "id": .string(other),
                            "AccountId": .string(account),
                        ],
                        ["attributes": ["type": "Contact"], "id": .string(gone), "LastName": "Back"],
                    ],
                ], idempotent: false)
            #expect(
                reply.body == [
                    [
                        "success": false,
                        "errors": [
                            [
                                "statusCode": "ENTITY_IS_DELETED", "message": "entity is deleted",
                                "fields": ["AccountId"],
                            ]
                        ],
                    ],
                    [
                        "success": false,
                        "errors": [
                            ["statusCode": "ENTITY_IS_DELETED", "message": "entity is deleted", "fields": []]
                        ],
                    ],
                ])
            #expect(try await client.get(type: "Contact", id: other)?["AccountId"] == nil)
        }
    }
}
