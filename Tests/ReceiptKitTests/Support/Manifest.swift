import Foundation
import ReceiptKit
import Testing

/// One entry of a `TestVectors/*/manifest.json`: an input file, the `verify-receipt` arguments
/// to verify it with, and a deep subset of the record expected.
struct ManifestVector: Sendable, CustomTestStringConvertible {
    let name: String
    let file: String
    let arguments: [String]
    /// The expected record subset, as JSON text (kept as text so the value is `Sendable`).
    let expectedJSON: String

    var testDescription: String { name }

    var expected: [String: Any] {
        (try? parseJSON(expectedJSON)) ?? [:]
    }

    var expectedCode: String? {
        (expected["error"] as? [String: Any])?["code"] as? String
    }

    /// Loads `TestVectors/<folder>/manifest.json`.
    static func load(_ folder: String) -> [ManifestVector] {
        let url = Fixtures.testVectors.appendingPathComponent(folder).appendingPathComponent("manifest.json")
        guard let data = try? Data(contentsOf: url),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let vectors = root["vectors"] as? [[String: Any]]
        else { return [] }
        return vectors.compactMap { vector in
            guard let name = vector["name"] as? String, let file = vector["file"] as? String,
                let arguments = vector["args"] as? [String], let expected = vector["expected"],
                let expectedData = try? JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys])
            else { return nil }
            return ManifestVector(name: name, file: file, arguments: arguments,
                                  expectedJSON: String(decoding: expectedData, as: UTF8.self))
        }
    }

    /// A verifier configured as `verify-receipt` would be by ``arguments`` (the subset of
    /// options the manifests use), with the fixed test clock.
    func verifier() throws -> AppStoreVerifier {
        try configured().verifier
    }

    /// The forced `--kind`, if the arguments name one.
    func kind() throws -> PayloadKind? {
        try configured().kind
    }

    private func configured() throws -> (verifier: AppStoreVerifier, kind: PayloadKind?) {
        var kind: PayloadKind?
        var configuration = AppStoreVerifier.Configuration()
        var roots: [[UInt8]] = []
        var pins: [String] = []
        var index = 0
        func value() throws -> String {
            index += 1
            return try #require(index < arguments.count ? arguments[index] : nil, "\(name): option without value")
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--root": roots.append(try Fixtures.bytes(Fixtures.packageRoot.appendingPathComponent(try value())))
            case "--pin-sha256": pins.append(try value())
            case "--bundle-id": configuration.bundleId = try value()
            case "--app-apple-id": configuration.appAppleId = Int64(try value())
            case "--environment": configuration.environment = AppStoreEnvironment(rawValue: try value())
            case "--kind": kind = PayloadKind(rawValue: try value())
            case "--at":
                let text = try value()
                switch text {
                case "signed": configuration.validationTime = .signedDate
                case "now": configuration.validationTime = .now
                default: configuration.validationTime = .fixed(try #require(Timestamp(rfc3339: text)))
                }
            default:
                Issue.record("\(name): unsupported manifest argument \(arguments[index])")
            }
            index += 1
        }
        if !roots.isEmpty || !pins.isEmpty {
            configuration.anchors = try TrustAnchors(rootCertificates: roots, pinnedSHA256: pins)
        }
        return (AppStoreVerifier(configuration, clock: Fixtures.fixedClock), kind)
    }
}
