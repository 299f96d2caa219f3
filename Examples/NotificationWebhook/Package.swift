// swift-tools-version: 6.1
import PackageDescription

// An example, not part of ReceiptKit: its own package, so that ReceiptKit's users don't build a
// web framework.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "NotificationWebhook",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "notification-webhook", targets: ["notification-webhook"]),
    ],
    dependencies: [
        // ReceiptKit from this checkout. In your own server:
        // .package(url: "https://github.com/…/ReceiptKit", from: "0.1.0")
        .package(name: "ReceiptKit", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // The routes and the configuration, importable by the tests.
        .target(
            name: "NotificationWebhook",
            dependencies: [
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Reads the environment and runs the server.
        .executableTarget(
            name: "notification-webhook",
            dependencies: [
                "NotificationWebhook",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Runs the server on a loopback port and talks to it over HTTP.
        .testTarget(
            name: "NotificationWebhookTests",
            dependencies: [
                "NotificationWebhook",
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
