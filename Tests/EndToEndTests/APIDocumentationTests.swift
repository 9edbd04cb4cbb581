import Testing

/// The API reference (the DocC catalogs, `Scripts/docs.sh`) has something to say about every
/// public symbol of the libraries an app builds on most: each has a doc comment of its own.
@Suite("API documentation", .serialized)
struct APIDocumentationTests {
    @Test(
        "every public symbol of BatonStore and BatonCoordinator has a doc comment",
        arguments: [
            "BatonStore", "BatonCoordinator",
        ])
    func everyPublicSymbolIsDocumented(_ module: String) async throws {
        let symbols = try await WriteCapabilityTests.publicSymbols(module)
        try #require(symbols.count > 100, "\(module): only \(symbols.count) public symbols read")
        let undocumented = symbols.filter { !$0.documented && !$0.synthesized }
        #expect(
            undocumented.isEmpty,
            """
            \(module): \(undocumented.count) public symbols without a doc comment:
            \(undocumented.map { "\($0.path) (\($0.location))" }.joined(separator: "\n"))
            """)
    }
}
