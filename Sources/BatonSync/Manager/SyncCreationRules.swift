import BatonStore

/// What a sync needs to be created: the rules ``SyncManager`` applies when it creates one (the
/// store's rules for names and index paths, since creating a sync registers its soups with an
/// index on the id fields). A syncs config or a `--sync-down` spec is checked by the same
/// function before a participant starts, so nothing the writer would refuse is accepted.
public enum SyncCreationRules {
    /// The part of a sync that breaks a rule.
    public enum Field: String, Sendable, CaseIterable {
        case syncName
        case soupName
        /// The target's id field, indexed in the soup.
        case idFieldName
        /// A parent-children target's children soup, and its indexed id and parent-id fields.
        case childrenSoupName
        case childrenIdFieldName
        case childrenParentIdFieldName
    }

    /// A broken rule: the field, and the store's error for it.
    public struct Violation: Error, Sendable {
        public var field: Field
        public var error: StoreError

        public var message: String { error.message }
    }

    /// The first rule the sync breaks, or nil when it can be created: names of 1-64 of
    /// A-Z a-z 0-9 . _ - (``Names``), id fields that are index paths (``IndexSpec/validate(path:)``).
    public static func violation(
        name: String?, soupName: String, idFieldName: String, children: ChildrenSoup?
    ) -> Violation? {
        var checks: [(Field, () throws -> Void)] = []
        if let name { checks.append((.syncName, { try Names.validate(name, what: "sync name") })) }
        checks.append((.soupName, { try Names.validate(soupName, what: "soup name") }))
        checks.append((.idFieldName, { try IndexSpec.validate(path: idFieldName) }))
        if let children {
            checks += [
                (.childrenSoupName, { try Names.validate(children.soupName, what: "soup name") }),
                (.childrenIdFieldName, { try IndexSpec.validate(path: children.idFieldName) }),
                (.childrenParentIdFieldName, { try IndexSpec.validate(path: children.parentIdFieldName) }),
            ]
        }
        for (field, check) in checks {
            do {
                try check()
            } catch let error as StoreError {
                return Violation(field: field, error: error)
            } catch {
                return Violation(field: field, error: StoreError(.invalidName, "\(error)"))
            }
        }
        return nil
    }

    /// Throws the store's error for the first rule the sync breaks.
    public static func require(
        name: String?, soupName: String, idFieldName: String, children: ChildrenSoup?
    ) throws {
        if let violation = violation(
            name: name, soupName: soupName, idFieldName: idFieldName, children: children)
        {
            throw violation.error
        }
    }
}
