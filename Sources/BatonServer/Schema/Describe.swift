import BatonJSON

/// What `describe`, the sObject basic information and the layout routes answer, built from the
/// schema in the shape Salesforce gives (the subset clients read: names, labels, types,
/// lengths, picklists, relationships, the capability flags, the URLs).
struct Describer {
    let schema: ServerSchema
    /// `/services/data/vNN.0`, as asked.
    let apiPath: String

    /// `Account` → `Account`, `Invoice_Line__c` → `Invoice Line`.
    static func label(of type: String) -> String { FieldDescription.label(of: type) }

    /// `sobjects/TYPE`'s `objectDescribe` and `describe`'s top level share these.
    func objectSummary(_ object: ObjectDescription) -> JSONObject {
        let label = Self.label(of: object.name)
        let base = "\(apiPath)/sobjects/\(object.name)"
        var summary: JSONObject = [
            "name": .string(object.name), "label": .string(label), "labelPlural": .string(label + "s"),
            "keyPrefix": .string(RecordId.prefix(for: object.name)),
            "custom": .bool(object.name.hasSuffix("__c")), "customSetting": false,
            "urls": [
                "sobject": .string(base), "describe": .string(base + "/describe"),
                "layouts": .string(base + "/describe/layouts"),
                "compactLayouts": .string(base + "/describe/compactLayouts"),
                "rowTemplate": .string(base + "/{ID}"),
            ],
        ]
        for flag in [
            "createable", "updateable", "deletable", "queryable", "retrieveable", "searchable", "layoutable",
            "compactLayoutable", "mergeable", "mruEnabled", "replicateable", "triggerable", "undeletable",
            "feedEnabled", "searchLayoutable",
        ] {
            summary[flag] = true
        }
        for flag in ["activateable", "deprecatedAndHidden", "hasSubtypes", "isSubtype"] {
            summary[flag] = false
        }
        return summary
    }

    /// `GET sobjects/TYPE/describe`.
    func describe(_ object: ObjectDescription) -> JSONValue {
        var out = objectSummary(object)
        out["fields"] = .array(object.fields.map { .object(describe($0)) })
        out["childRelationships"] = .array(
            schema.childRelationships(of: object.name).map { child in
                [
                    "childSObject": .string(child.childType), "field": .string(child.field),
                    "relationshipName": .string(child.name), "cascadeDelete": .bool(child.cascadeDelete),
                    "restrictedDelete": false, "deprecatedAndHidden": false,
                ]
            })
        out["recordTypeInfos"] = [
            [
                "name": "Master", "developerName": "Master", "master": true, "active": true,
                "available": true,
                "defaultRecordTypeMapping": true, "recordTypeId": "012000000000000AAA",
            ]
        ]
        out["networkScopeFieldName"] = .null
        return .object(out)
    }

    func describe(_ field: FieldDescription) -> JSONObject {
        let name = field.name
        let isId = name == "Id"
        let isExternalId = name == ServerSchema.externalIdField
        return [
            "name": .string(name), "label": .string(field.label), "type": .string(field.type.rawValue),
            "soapType": .string(Self.soapType(field.type)),
            "length": .int(Int64(field.length ?? (field.type == .id || field.type == .reference ? 18 : 0))),
            "byteLength": .int(Int64((field.length ?? 0) * 3)),
            "nillable": .bool(!field.required && !field.serverManaged),
            "createable": .bool(!field.serverManaged), "updateable": .bool(!field.serverManaged),
            "defaultedOnCreate": .bool(field.serverManaged), "custom": .bool(name.hasSuffix("__c")),
            "externalId": .bool(isExternalId), "idLookup": .bool(isId || isExternalId), "unique": .bool(isId),
            "nameField": .bool(name == "Name"), "filterable": true, "sortable": true, "groupable": true,
            "picklistValues": .array(
                field.picklistValues.map { value in
                    [
                        "value": .string(value), "label": .string(value), "active": true,
                        "defaultValue": false,
                        "validFor": .null,
                    ]
                }),
            "restrictedPicklist": .bool(field.restrictedPicklist),
            "referenceTo": .array(field.referenceTo.map { [.string($0)] } ?? []),
            "relationshipName": field.relationshipName.map(JSONValue.string) ?? .null,
            "defaultValue": .null,
        ]
    }

    static func soapType(_ type: FieldType) -> String {
        switch type {
        case .id, .reference: "tns:ID"
        case .int: "xsd:int"
        case .double, .currency, .percent: "xsd:double"
        case .boolean: "xsd:boolean"
        case .date: "xsd:date"
        case .datetime: "xsd:dateTime"
        default: "xsd:string"
        }
    }

    /// The fields a layout shows: `Compact` the name and the next three fields people write,
    /// `Full` every field people write (Baton's external id left out).
    func layoutFields(_ object: ObjectDescription, compact: Bool) -> [FieldDescription] {
        let fields = object.fields.filter { !$0.serverManaged && $0.name != ServerSchema.externalIdField }
        return compact ? Array(fields.prefix(4)) : fields
    }

    /// `GET ui-api/layout/TYPE?layoutType=Full|Compact`: one section, two fields a row.
    func uiLayout(_ object: ObjectDescription, layoutType: String) -> JSONValue {
        let fields = layoutFields(object, compact: layoutType == "Compact")
        let rows = stride(from: 0, to: fields.count, by: 2).map { start -> JSONValue in
            [
                "layoutItems": .array(
                    fields[start..<min(fields.count, start + 2)].map { field in
                        [
                            "label": .string(field.label), "required": .bool(field.required),
                            "editableForNew": true, "editableForUpdate": true, "sortable": false,
                            "lookupIdApiName": field.type == .reference ? .string(field.name) : .null,
                            "layoutComponents": [
                                [
                                    "apiName": .string(field.name), "componentType": "Field",
                                    "label": .string(field.label),
                                ]
                            ],
                        ]
                    })
            ]
        }
        return [
            "id": .string(layoutId(object, layoutType)), "eTag": .string(layoutId(object, layoutType)),
            "layoutType": .string(layoutType), "mode": "View", "objectApiName": .string(object.name),
            "recordTypeId": "012000000000000AAA",
            "sections": [
                [
                    "id": .string(RecordId.make(prefix: "01B", sequence: 1)),
                    "heading": .string("\(Self.label(of: object.name)) Information"), "collapsible": false,
                    "columns": 2, "rows": .int(Int64(rows.count)), "useHeading": false,
                    "layoutRows": .array(rows),
                ]
            ],
        ]
    }

    /// `GET sobjects/TYPE/describe/layouts`: the page layout of the master record type.
    func describeLayouts(_ object: ObjectDescription) -> JSONValue {
        let fields = layoutFields(object, compact: false)
        let rows = stride(from: 0, to: fields.count, by: 2).map { start -> JSONValue in
            [
                "numItems": .int(Int64(min(2, fields.count - start))),
                "layoutItems": .array(
                    fields[start..<min(fields.count, start + 2)].map { field in
                        [
                            "label": .string(field.label), "required": .bool(field.required),
                            "editableForNew": true,
                            "editableForUpdate": true, "placeholder": false,
                            "layoutComponents": [
                                [
                                    "type": "Field", "value": .string(field.name),
                                    "details": .object(describe(field)),
                                ]
                            ],
                        ]
                    }),
            ]
        }
        let section: JSONValue = [
            "heading": .string("\(Self.label(of: object.name)) Information"), "columns": 2,
            "rows": .int(Int64(rows.count)), "useHeading": true, "useCollapsibleSection": false,
            "layoutRows": .array(rows),
        ]
        return [
            "layouts": [
                [
                    "id": .string(layoutId(object, "Full")), "detailLayoutSections": [section],
                    "editLayoutSections": [section], "buttonLayoutSection": .null, "relatedLists": [],
                ]
            ],
            "recordTypeMappings": [], "recordTypeSelectorRequired": [false],
        ]
    }

    /// A stable `00h…` id per type and layout type.
    func layoutId(_ object: ObjectDescription, _ layoutType: String) -> String {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in (object.name + "/" + layoutType).utf8 {
            hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211
        }
        return RecordId.make(prefix: "00h", sequence: Int64(hash % 3_000_000_000_000))
    }
}
