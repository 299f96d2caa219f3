// swift-tools-version: 6.1
import PackageDescription

// receiptkit-server: its own package, so that ReceiptKit's library users never build a web
// framework or database drivers.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "ReceiptKitServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receiptkit-server", targets: ["receiptkit-server"]),
        .library(name: "ReceiptKitServer", targets: ["ReceiptKitServer"]),
        .library(name: "AppStoreServerAPI", targets: ["AppStoreServerAPI"]),
        .executable(name: "appstore-api", targets: ["appstore-api"]),
    ],
    dependencies: [
        .package(name: "ReceiptKit", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Hummingbird's own event loops; the executable sizes their group (NIOSingletons).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        // The App Store Server API client's HTTP (AppStoreServerAPI).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The appstore-api command's options.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The tests read openapi.yaml with these and check every answer against its schema.
        .package(url: "https://github.com/mattpolzin/OpenAPIKit", from: "6.4.0", traits: []),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // The application: configuration, store, routes, metrics. Tests import it.
        .target(
            name: "ReceiptKitServer",
            dependencies: [
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                // Apple's verifyReceipt response body, for POST /verifyReceipt.
                .product(name: "ReceiptKitFormats", package: "ReceiptKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's own functions, for the store's hot statements (Store/StoreStatement.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // SIGHUP, on which the API tokens' file is read again.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // Reconciling with Apple: purchases by transaction id, backfill, missed notifications.
                "AppStoreServerAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // pthread locks the thread sanitizer follows (Support/Locked.swift).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // HMAC-SHA256 of the webhooks' signatures (Delivery/WebhookSignature.swift).
                "CReceiptKitServerOpenSSL",
                // Deflating the JSON the store keeps beside Apple's bytes (Store/StoredJSON.swift).
                "CReceiptKitServerZlib",
                "ServerSupport",
            ],
            // The console's page, style sheet, script modules and icon, and the deflate dictionaries
            // of the stored JSON and raw bytes, compiled into the binary as `PackageResources`
            // (Console/ConsoleAssets.swift, Store/StoredJSON.swift, Ingest/RawCompaction.swift).
            resources: [
                .embedInCode("Console/Assets"), .embedInCode("Store/stored-json-dictionary-1.txt"),
                .embedInCode("Ingest/raw-dictionary-1.txt"),
            ],
            swiftSettings: strictSettings
        ),
        // What the server's targets share and nothing else needs: durations in units (hex and
        // base64url are ReceiptKit's, public).
        .target(name: "ServerSupport", swiftSettings: strictSettings),
        // libcrypto for the server: the webhooks' HMAC, as every cryptographic operation of the
        // project goes through OpenSSL.
        .systemLibrary(
            name: "CReceiptKitServerOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib, which every Swift toolchain on Linux needs and Foundation links: the store's
        // JSON deflated. OpenSSL has no deflate of its own.
        .systemLibrary(
            name: "CReceiptKitServerZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Reads the environment, migrates, serves until SIGTERM.
        .executableTarget(
            name: "receiptkit-server",
            dependencies: [
                "ReceiptKitServer",
                // What --version prints.
                .product(name: "ReceiptKitRelease", package: "ReceiptKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // Over a loopback socket with a real HTTP client, on SQLite and (when
        // RECEIPTKIT_TEST_POSTGRES_URL is set) PostgreSQL.
        .testTarget(
            name: "ReceiptKitServerTests",
            dependencies: [
                "ReceiptKitServer",
                "ServerSupport",
                "CServerTestOpenSSL",
                "AppStoreServerAPI",
                "AppStoreServerAPIFake",
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                // The tests' shared state behind the same pthread lock as the server's (Locked).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The console's tests drive chromedriver over its WebDriver HTTP protocol.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // openapi.yaml parsed, so OpenAPITests checks each answer against its schema.
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSettings
        ),
        // The App Store Server API client: every signed item Apple answers is verified by
        // ReceiptKit before it is returned.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                "ServerSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The command: one subcommand per endpoint, and the StoreKit signers.
        .executableTarget(
            name: "appstore-api",
            dependencies: [
                "AppStoreServerAPI",
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "ReceiptKitRelease", package: "ReceiptKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // A fake App Store Server API on loopback for tests (this package's, and the server's
        // reconciliation later): checks each request's token, answers Apple's JSON with JWS signed
        // under the test PKI. Not a product.
        .target(
            name: "AppStoreServerAPIFake",
            dependencies: [
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                // The performance test of Retention Messaging calls the configured Get Retention
                // Message URL, as Apple does.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/AppStoreServerAPIFake",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "AppStoreServerAPI",
                "AppStoreServerAPIFake",
                "appstore-api",
                .product(name: "ReceiptKit", package: "ReceiptKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Raw requests to the fake (an image the client would refuse to send).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // libcrypto for the tests only: they sign notifications under the project's test PKI at
        // test time (ReceiptKit's own C module is internal to it and verifies, never signs).
        .systemLibrary(
            name: "CServerTestOpenSSL",
            path: "Tests/CServerTestOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
    ]
)
