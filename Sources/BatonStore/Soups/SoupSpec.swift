/// A soup to register: its name and the paths it indexes.
public struct SoupSpec: Sendable, Hashable {
    public var name: String
    public var indexSpecs: [IndexSpec]

    public init(_ name: String, indexSpecs: [IndexSpec] = []) {
        self.name = name
        self.indexSpecs = indexSpecs
    }
}
