// swift-tools-version: 6.1
// libFuzzer targets for ReceiptKit's parsers. Not part of the main package: each executable
// here has no `main` of its own (libFuzzer provides it), so they build only with
// `-sanitize=fuzzer`. Build and run them with `scripts/fuzz.sh` from the repository root.
import PackageDescription

let fuzzTargets = ["fuzz-jws", "fuzz-payload", "fuzz-receipt", "fuzz-input", "fuzz-timestamp"]

let package = Package(
    name: "ReceiptKitFuzz",
    dependencies: [
        .package(name: "ReceiptKit", path: ".."),
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [.product(name: "ReceiptKit", package: "ReceiptKit")]
        ),
    ] + fuzzTargets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "ReceiptKit", package: "ReceiptKit")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    }
)
