// swift-tools-version:6.2
import PackageDescription

// A host app and its share extension, two small executables over one shared directory, built
// on Baton's libraries (the root package, by path).
let package = Package(
    name: "NotesPair",
    dependencies: [
        .package(name: "baton", path: "../.."),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "NotesKit",
            dependencies: [
                .product(name: "BatonCoordinator", package: "baton"),
                .product(name: "BatonREST", package: "baton"),
                .product(name: "BatonSync", package: "baton"),
                .product(name: "BatonStore", package: "baton"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(name: "NotesHost", dependencies: ["NotesKit"]),
        .executableTarget(name: "NotesShare", dependencies: ["NotesKit"]),
    ]
)
