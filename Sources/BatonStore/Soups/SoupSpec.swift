/// A soup to register: its name and the paths it indexes.
public struct SoupSpec: Sendable, Hashable {
    /// The soup's name.
    public var name: String
    /// The paths to index.
    public var indexSpecs: [IndexSpec]

    /// Makes the spec of soup `name`, indexing `indexSpecs`.
    public init(_ name: String, indexSpecs: [IndexSpec] = []) {
        self.name = name
        self.indexSpecs = indexSpecs
    }
}
