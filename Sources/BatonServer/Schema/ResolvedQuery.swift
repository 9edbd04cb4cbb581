import SOQL

/// A query checked against the schema, each select item resolved to what it reads.
struct ResolvedQuery: Sendable {
    var object: ObjectDescription
    var query: SOQLQuery
    var items: [ResolvedItem]

    /// `SELECT COUNT() FROM …`.
    var isCount: Bool { query.fields == [.count] }

    /// `SELECT MAX(…), MIN(…) FROM …`: one row of aggregates.
    var isAggregate: Bool { query.isAggregate }

    /// Whether projecting a record reads other records (a parent field or a child subquery).
    var readsRelated: Bool {
        items.contains {
            if case .field = $0 { return false }
            return true
        }
    }
}

/// One select item, resolved.
indirect enum ResolvedItem: Sendable {
    /// A field of the record itself.
    case field(FieldDescription)
    /// A field reached through a lookup (`Owner.Name`: the lookup `OwnerId`, then `Name` on `User`).
    case parent(lookup: FieldDescription, parent: ObjectDescription, item: ResolvedItem)
    /// A child subquery (`(SELECT Id FROM Contacts)`): the child type, its lookup to this record,
    /// and the subquery resolved against the child type.
    case children(relationship: String, lookup: FieldDescription, query: ResolvedQuery)
}

extension ServerSchema {
    /// Resolves every name of `query`: `INVALID_TYPE` for an unknown type or child relationship,
    /// `INVALID_FIELD` for an unknown field or parent relationship, as Salesforce answers.
    func resolve(_ query: SOQLQuery) throws -> ResolvedQuery {
        guard let object = object(query.object) else {
            throw SalesforceError(
                status: 400, "INVALID_TYPE",
                "sObject type '\(query.object.prefix(80))' is not supported. If you are attempting to use a custom object, be sure to append the '__c' after the entity name. Please reference your WSDL or the describe call for the appropriate names."
            )
        }
        return try resolve(query, on: object, nested: false)
    }

    private func resolve(_ query: SOQLQuery, on object: ObjectDescription, nested: Bool) throws
        -> ResolvedQuery
    {
        var items: [ResolvedItem] = []
        for item in query.fields {
            switch item {
            case .count:
                if nested { throw SalesforceError.malformedQuery("COUNT() is not supported in a subquery") }
            case .aggregate(let function, let path):
                if nested {
                    throw SalesforceError.malformedQuery(
                        "\(function.rawValue)() is not supported in a subquery")
                }
                items.append(try resolve(path: path, on: object).item)
            case .field(let path):
                items.append(try resolve(path: path, on: object).item)
            case .subquery(let subquery):
                if nested { throw SalesforceError.malformedQuery("a subquery cannot hold a subquery") }
                guard let (child, lookup) = self.child(subquery.object, of: object.name) else {
                    throw SalesforceError(
                        status: 400, "INVALID_TYPE",
                        "Didn't understand relationship '\(subquery.object.prefix(80))' in FROM part of query call. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names."
                    )
                }
                let relationship = lookup.childRelationshipName ?? subquery.object
                items.append(
                    .children(
                        relationship: relationship, lookup: lookup,
                        query: try resolve(subquery, on: child, nested: true)))
            }
        }
        if query.isAggregate, let ordered = query.orderBy.first {
            throw SalesforceError.malformedQuery(
                "Ordered field must be grouped or aggregated: \(ordered.field.prefix(80))")
        }
        // WHERE and ORDER BY names are checked when they are translated to SQL.
        return ResolvedQuery(object: object, query: query, items: items)
    }

    /// A dotted field path on `object`: the item that reads it and the field it ends on.
    func resolve(path: String, on object: ObjectDescription) throws -> (
        item: ResolvedItem, field: FieldDescription
    ) {
        var components = path.split(separator: ".").map(String.init)
        // `Account.Name` on Account: the type's own name may lead the path.
        if components.count > 1, components[0].lowercased() == object.name.lowercased(),
            object.lookup(relationship: components[0]) == nil
        {
            components.removeFirst()
        }
        return try resolve(components[...], on: object)
    }

    private func resolve(_ components: ArraySlice<String>, on object: ObjectDescription) throws -> (
        item: ResolvedItem, field: FieldDescription
    ) {
        let name = components.first ?? ""
        if components.count == 1 {
            guard let field = object.field(name) else {
                throw SalesforceError.noSuchColumn(name, on: object.name)
            }
            return (.field(field), field)
        }
        guard let lookup = object.lookup(relationship: name), let parentName = lookup.referenceTo,
            let parent = self.object(parentName)
        else {
            throw SalesforceError(
                status: 400, "INVALID_FIELD",
                "Didn't understand relationship '\(name.prefix(80))' in field path. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names."
            )
        }
        let (item, field) = try resolve(components.dropFirst(), on: parent)
        return (.parent(lookup: lookup, parent: parent, item: item), field)
    }
}
