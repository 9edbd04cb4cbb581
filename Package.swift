// swift-tools-version:6.2
import Foundation
import PackageDescription

let package = Package(
    name: "baton",
    products: [
        .executable(name: "baton", targets: ["baton"]),
        .library(name: "BatonStore", targets: ["BatonStore"]),
        .library(name: "BatonSync", targets: ["BatonSync"]),
        .library(name: "BatonREST", targets: ["BatonREST"]),
        .library(name: "BatonServer", targets: ["BatonServer"]),
        .library(name: "BatonCoordinator", targets: ["BatonCoordinator"]),
        .library(name: "SOQL", targets: ["SOQL"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // JSON values with exact number round trips; shared by the store, the client and the server.
        .target(name: "BatonJSON"),
        // The SOQL subset: parser, printer, mutator. No I/O, no dependencies.
        .target(name: "SOQL"),
        // The clocks every part times with (wall and monotonic) and Duration conversions.
        .target(name: "BatonTime"),
        // Locked<Value>: a Synchronization.Mutex that ThreadSanitizer can see (its annotations,
        // weak, in a tiny C target: no-ops outside a -sanitize=thread build).
        .target(name: "CThreadSanitizer"),
        .target(name: "BatonLocking", dependencies: ["CThreadSanitizer"]),
        // sqlite3_db_config, which is variadic, for Swift: the store's connections turn triggers
        // off (the write guards are for other connections).
        .target(name: "CSQLiteConfig", linkerSettings: [.linkedLibrary("sqlite3")]),
        // The shared SQLite store.
        .target(
            name: "BatonStore",
            dependencies: [
                "BatonLocking", "BatonJSON", "BatonTime", "CSQLiteConfig",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The sync engine: SyncManager, statuses, targets protocols.
        .target(
            name: "BatonSync",
            dependencies: ["BatonLocking", "BatonStore", .product(name: "Logging", package: "swift-log")]
        ),
        // The REST client and the Salesforce-style targets.
        .target(
            name: "BatonREST",
            dependencies: [
                "BatonSync", "SOQL",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // The multi-process coordinator: writer lease, inotify lifecycle signals, participants.
        .target(
            name: "BatonCoordinator",
            dependencies: [
                "BatonLocking", "BatonStore", "BatonSync", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The deterministic simulation: many participants' machines in one process, on one
        // thread, against a simulated kernel lock, directory, store and clock.
        .target(
            name: "BatonSimulation",
            dependencies: ["BatonCoordinator", "BatonJSON", "BatonStore", "BatonSync"]),
        // The reference REST server.
        .target(
            name: "BatonServer",
            dependencies: [
                "BatonLocking", "SOQL", "BatonJSON", "BatonTime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The demo, chaos and bench harnesses and the child processes they run (not a product):
        // the executable parses and prints, this does the work, and its logic is unit-tested.
        .target(
            name: "BatonHarness",
            dependencies: [
                "BatonLocking", "BatonStore", "BatonSync", "BatonREST", "BatonServer", "BatonCoordinator",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "baton",
            dependencies: [
                "BatonLocking", "BatonStore", "BatonSync", "BatonREST", "BatonServer", "BatonCoordinator",
                "BatonHarness", "BatonSimulation",
                "SOQL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The NotesPair example's host app and share extension, built here with this package's
        // dependencies so that the test command builds each dependency once.
        // Examples/NotesPair/Package.swift is the same app as a package of its own that depends
        // on Baton by URL, as an app would; a test type-checks these sources as such an app,
        // outside this package (no `package` declarations).
        .target(
            name: "NotesKit",
            dependencies: [
                "BatonCoordinator", "BatonREST", "BatonSync", "BatonStore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/NotesPair/Sources/NotesKit"
        ),
        .executableTarget(
            name: "NotesHost", dependencies: ["NotesKit"], path: "Examples/NotesPair/Sources/NotesHost"),
        .executableTarget(
            name: "NotesShare", dependencies: ["NotesKit"], path: "Examples/NotesPair/Sources/NotesShare"),
        // Helpers shared by the test targets (temporary directories, a live server).
        .target(
            name: "BatonTestSupport",
            dependencies: ["BatonServer", "BatonREST", .product(name: "Logging", package: "swift-log")],
            path: "Tests/BatonTestSupport"
        ),
        .testTarget(name: "SOQLTests", dependencies: ["SOQL"]),
        .testTarget(name: "BatonSimulationTests", dependencies: ["BatonSimulation", "BatonCoordinator"]),
        .testTarget(name: "BatonJSONTests", dependencies: ["BatonJSON"]),
        .testTarget(
            name: "BatonStoreTests", dependencies: ["BatonTestSupport", "BatonStore"],
            // A store file written by an earlier schema, with the answers its queries gave.
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "BatonServerTests", dependencies: ["BatonTestSupport", "BatonServer", "BatonREST"]),
        .testTarget(name: "BatonRESTTests", dependencies: ["BatonTestSupport", "BatonREST", "BatonServer"]),
        .testTarget(
            name: "BatonSyncTests",
            dependencies: ["BatonLocking", "BatonTestSupport", "BatonSync", "BatonREST", "BatonServer"]),
        .testTarget(
            name: "BatonCoordinatorTests",
            dependencies: [
                "BatonLocking", "BatonTestSupport", "BatonCoordinator", "BatonStore", "BatonSync",
                "BatonREST", "BatonServer",
            ]),
        .testTarget(
            name: "BatonHarnessTests",
            dependencies: ["BatonHarness", "BatonStore", "BatonSync", "BatonCoordinator"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "BatonLocking", "BatonTestSupport", "BatonStore", "BatonREST", "BatonServer",
                "BatonCoordinator",
                "BatonHarness",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// The API reference's generator (Scripts/docs.sh sets BATON_DOCS=1): only when asked, so that
// an app that depends on Baton does not resolve a documentation plugin it never runs.
if ProcessInfo.processInfo.environment["BATON_DOCS"] != nil {
    package.dependencies.append(
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// The libFuzzer targets (Scripts/fuzz.sh sets BATON_FUZZ=1 and builds them with
// `-sanitize=fuzzer,address` into .build-fuzz): only when asked, like the docs plugin.
if ProcessInfo.processInfo.environment["BATON_FUZZ"] != nil {
    package.targets.append(.target(name: "FuzzDriver", path: "Fuzz/Driver"))
    package.targets.append(.target(name: "FuzzSupport", dependencies: ["FuzzDriver"], path: "Fuzz/Support"))
    let fuzzTargets: [(name: String, directory: String, dependencies: [Target.Dependency])] = [
        ("FuzzJSON", "json", ["BatonJSON"]),
        ("FuzzJSONScanner", "json-scanner", ["BatonJSON"]),
        ("FuzzSOQL", "soql", ["SOQL"]),
        ("FuzzDateTime", "datetime", ["SOQL"]),
        ("FuzzLifecycle", "lifecycle", ["BatonCoordinator"]),
        ("FuzzLeaseRecord", "lease-record", ["BatonCoordinator", "BatonStore"]),
        ("FuzzParticipantStatus", "participant-status", ["BatonCoordinator"]),
        ("FuzzSchema", "schema", ["BatonServer"]),
        (
            "FuzzServerRequest", "server-request",
            ["BatonServer", .product(name: "HummingbirdTesting", package: "hummingbird")]
        ),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: ["FuzzSupport"] + target.dependencies,
                path: "Fuzz/Targets/\(target.directory)"))
    }
}
