// swift-tools-version:6.2
import PackageDescription

// NotesPair as an app builds it: Baton by URL with a version range, nothing else pinned.
// (Baton's own package builds these same sources as targets of its own, so that its test command
// builds each dependency once; a test resolves this manifest against a local copy of Baton.)
let package = Package(
    name: "NotesPair",
    dependencies: [
        .package(url: "https://github.com/baton-sync/baton", from: "0.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.0.0"),
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
