// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "baton",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "baton", targets: ["baton"]),
        .library(name: "BatonStore", targets: ["BatonStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        .target(
            name: "BatonStore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "baton",
            dependencies: [
                "BatonStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "BatonStoreTests", dependencies: ["BatonStore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["BatonStore"]),
    ],
    swiftLanguageModes: [.v6]
)
