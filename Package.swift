// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "ReceiptKit",
    products: [
        .library(name: "ReceiptKit", targets: ["ReceiptKit"]),
        // What the command and the server print besides the library's own records: input labels,
        // CSV rows and the body of Apple's verifyReceipt endpoint.
        .library(name: "ReceiptKitFormats", targets: ["ReceiptKitFormats"]),
        .executable(name: "verify-receipt", targets: ["verify-receipt"]),
        // The version and the commit the commands print for `--version` (this package's and
        // Server/'s); not for library users.
        .library(name: "ReceiptKitRelease", targets: ["ReceiptKitRelease"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // A build plugin only: `swift package generate-documentation` builds the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // libcrypto from OpenSSL 3: every signature, digest and X.509 operation.
        .systemLibrary(
            name: "CReceiptKitOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // jansson: every JSON parse, with JSON_REJECT_DUPLICATES.
        .systemLibrary(
            name: "CReceiptKitJansson",
            pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]
        ),
        // Base64 decoding 16 characters at a time with SSSE3, header only: a notification's payload
        // is 12 KB of base64, decoded before anything else (the Swift decoder does the tail and
        // the rules).
        .systemLibrary(name: "CReceiptKitBase64"),
        .target(
            name: "ReceiptKit",
            dependencies: ["CReceiptKitOpenSSL", "CReceiptKitJansson", "CReceiptKitBase64"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ReceiptKitFormats",
            dependencies: ["ReceiptKit"],
            swiftSettings: strictSettings
        ),
        // What the commands print for --version (scripts/release.sh names the commit).
        .target(
            name: "ReceiptKitRelease",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "verify-receipt",
            dependencies: [
                "ReceiptKit",
                "ReceiptKitFormats",
                "ReceiptKitRelease",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // For the tests and the benchmark, not a product: a real `openssl ocsp` responder on
        // loopback, and SplitMix64 (random histories, drawn identifiers).
        .target(
            name: "ReceiptKitTestSupport",
            swiftSettings: strictSettings
        ),
        // Measures verify-receipt against `openssl speed`; not part of `swift test`.
        .executableTarget(
            name: "receiptkit-benchmark",
            // libcrypto signs the synthetic archive of distinct transactions `--state` is measured
            // on; the OCSP part starts a responder.
            dependencies: ["CReceiptKitOpenSSL", "ReceiptKitTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReceiptKitTests",
            // OpenSSL signs payloads under the test PKI; the CLI is built for end-to-end tests, and
            // the manifest tests read their options with its own parser (ArgumentParser).
            dependencies: [
                "ReceiptKit", "ReceiptKitFormats", "CReceiptKitOpenSSL", "verify-receipt", "ReceiptKitTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
